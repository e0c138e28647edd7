"""The params: params.yaml and profiles composed, validated into typed objects, checked across sections, traced."""
