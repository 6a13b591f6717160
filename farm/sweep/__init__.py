"""One sweep in this process: its flags resolved once into a spec per stage, the lifecycle (the one
finisher), observers, the executor seam, the local executor and its adaptive order, deadlines, the
run journal and reports replayed from it.
"""
