# Nothing added: the correct, fused candidate.
