"""One run of one case: its turns under timeouts (``execute``, never raises), the dynamic loop with its
simulators, and the failure class of a run.
"""
