"""Model helpers built on bundled .nx modules (nxc.models.qwen3)."""
