"""What may be fetched, and when: URL rules and canonical form, robots.txt, addresses, host pacing."""
