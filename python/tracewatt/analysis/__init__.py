"""Analyses of runs and of machines' job logs: the screening of link settings from one run's idle
intervals (:mod:`.idle`), the tuning of link settings within a slowdown budget (:mod:`.tuning`),
and the DIMM standby energy of hotplug policies over a cluster's job log (:mod:`.joblog`)."""
