"""The projector: the fold of the event log into state, its archive, analytics and reports."""
