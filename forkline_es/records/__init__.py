"""Run record documents (002, Run Records Capability) and the list/get/get-step operations."""
