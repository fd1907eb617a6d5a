"""AWS Lambda entry points: each builds its dependencies once per container and calls the engine."""
