"""The Kubernetes API-server emulator behind kube_emulator.py, one module per concern:
resources, common (times, errors), selectors, patch, store, api and pods (behaviour without
HTTP), tables, discovery, watch and server (HTTP)."""
