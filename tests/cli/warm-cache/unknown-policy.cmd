warm-cache build/kiln-warm-cache-unused no-such-policy
