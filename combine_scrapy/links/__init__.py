"""Which links are followed first: link scoring, learned URL rules, the online model, sitemaps."""
