"""Analyses both emitters share: float32 unboxing and the guard-capture plan."""
