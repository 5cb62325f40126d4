"""What fprintd's signals during one run say, for the result objects of the end-to-end
tests: a class with ``events`` (testbed events recorded during the run: ``bed.events(mark)``)
takes these from ``ScanEvents``.

* ``verify_starts``: the VerifyFingerSelected signals (every VerifyStart sends one);
* ``scans_started``: those and the reader waiting for a finger (finger-needed true);
* ``matched``: a VerifyStatus verify-match came.
"""


class ScanEvents:
    events: list

    @property
    def verify_starts(self):
        return [e for e in self.events if e.name == "VerifyFingerSelected"]

    @property
    def scans_started(self):
        return [e for e in self.events if e.name == "VerifyFingerSelected"
                or (e.name == "finger-needed" and e.args[0])]

    @property
    def matched(self):
        return any(e.name == "VerifyStatus" and e.args[0] == "verify-match" for e in self.events)
