"""kgym's sandbox: evaluates one untrusted KernelBench candidate per forked process.

The parent (a C++ gpu_executor) owns every timeout and kill; this package only executes.
"""
