"""The write path: validation, the durable insert, and the outbox that keeps derived indexes in step."""
