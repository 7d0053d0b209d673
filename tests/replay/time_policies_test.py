#!/usr/bin/env python3
"""Time-driven policies replayed over several sessions (Debian's python3, standard library only).

    time_policies_test.py KILN SOURCE_DIR

`kiln simulate --cycles N --period D --output json` on the scenarios in tests/replay/data: a tdm
revocable zone opens and closes on the session clock, and rescheduling moves pods off a hot node
session after session. Golden scenarios check one session; these check the sequence.
"""
import os
import sys
import unittest

from replay_util import simulate_sessions

KILN = SOURCE = None


def sessions(name, cycles, period):
    return simulate_sessions(KILN, os.path.join(SOURCE, "tests", "replay", "data", name), cycles,
                             "--period", period)


class TimePolicies(unittest.TestCase):
    def test_tdm_zone_opens_and_closes(self):
        got = [(s["binds"], sorted(s["evictions"]), sorted(s["unschedulable"]))
               for s in sessions("tdm-zone-opens-and-closes.yaml", 6, "1m")]
        self.assertEqual(got, [
            ({}, [], ["c1/b0"]),                 # 19:59 closed
            ({"c1/b0": "lend"}, [], []),         # 20:00 open
            ({}, [], []),                        # 20:01 running
            ({}, [], []),                        # 20:02 the window's last minute
            ({}, ["c1/b0"], []),                 # 20:03 closed: shuffle evicts it
            ({}, [], ["c1/b0"]),                 # 20:04 waits for the next window
        ])

    def test_rescheduling_over_time(self):
        got = [(s["binds"], sorted(s["evictions"]))
               for s in sessions("rescheduling-over-time.yaml", 3, "10s")]
        self.assertEqual(got, [
            ({}, ["c1/h1"]),
            ({"c1/h1": "cold"}, ["c1/h2"]),
            ({"c1/h2": "cold"}, []),
        ])


if __name__ == "__main__":
    KILN, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
