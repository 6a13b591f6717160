"""One sweep in this process: the lifecycle (the one finisher), observers, the executor seam, the
local executor and its adaptive order, deadlines, the run journal and reports replayed from it.
"""
