#!/usr/bin/env python3
"""A gang eviction's nomination redeemed by the next session's allocate (Debian's python3,
standard library only).

    nomination_next_session_test.py KILN SOURCE_DIR

Golden scenarios check the first session only; this one runs
gangpreempt-hard-victims-inside-one-leaf.yaml for two sessions (`kiln simulate --cycles 2`).

Session 0 (the golden's expect): gangpreempt evicts low-0 from s1-n3 and plans train into the
leaf s1: train-0 on the idle s1-n4, train-1 on s1-n3 once low-0 is gone. The plan nominates s1
for train's sub-job and each pod's node (Cluster::nominated_hyper_nodes, kept across sessions).

Session 1: low-0 is gone and recreated Pending. allocate takes train first (priority 1000 over
low's 10) and places it from the nomination (allocate's N1, Volcano's allocateFromNomination):
each pod on its own nominated node, train-0 on s1-n4 and train-1 on s1-n3. The usual search would
have put train-0 on s1-n3: inside s1 both nodes are idle and score alike, and the first one wins.
low-0 then takes the only idle node left, s0-n2.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "replay"))
from replay_util import simulate_sessions  # noqa: E402

KILN = SOURCE = None


def sessions(name, cycles):
    return simulate_sessions(KILN, os.path.join(SOURCE, "tests", "scenarios", "topology", name), cycles)


class Nomination(unittest.TestCase):
    def test_next_session_places_the_gang_on_its_nominated_nodes(self):
        got = [(s["binds"], sorted(s["evictions"]), s["pipelined"])
               for s in sessions("gangpreempt-hard-victims-inside-one-leaf.yaml", 2)]
        self.assertEqual(got, [
            ({}, ["c1/low-0"], {"c1/train-0": "s1-n4", "c1/train-1": "s1-n3"}),
            ({"c1/train-0": "s1-n4", "c1/train-1": "s1-n3", "c1/low-0": "s0-n2"}, [], {}),
        ])


if __name__ == "__main__":
    KILN, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
