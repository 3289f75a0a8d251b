"""What a fetch becomes: the parsed document, its text, content key and near-duplicate fingerprint."""
