"""``farm bisect`` (SPEC 18): find the commit that made cases pass less often, with statistics.

``sequential`` (pure) decides a probe good or bad with a sequential test between GOOD's and BAD's
pass rates; ``search`` (pure) bisects the commits with it; ``git`` makes the throw-away
worktrees; ``probe`` runs ``farm test`` in one; ``output`` renders the result.
"""
