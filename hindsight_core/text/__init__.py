"""Text utilities shared by the write and recall paths: normalisation, tokens, entities, salience."""
