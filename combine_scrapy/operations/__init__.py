"""Running a job: command helpers, the harvest log, reports, the web console, a test web."""
