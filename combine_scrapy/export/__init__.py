"""Exports of a job's records."""
