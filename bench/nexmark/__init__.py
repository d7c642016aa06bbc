"""Nexmark on sparkstorm: generator, references, Streams queries, runner (docs/NEXMARK.md)."""
