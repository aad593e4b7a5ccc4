"""ZooKeeper access: the only package that imports kazoo.

What lives here: the node's session (:mod:`.session`: bounded calls, retry by error, state tracking, the
read/write primitives other packages use), write ops as values (:mod:`.ops`), the single fenced writer every
controller write goes through (:mod:`.fenced_writer`), the wire records kazoo lacks (:mod:`.protocol`: the
create2 write multi, multiRead, SetWatches and removeWatches; records and codecs only) and their sending on
kazoo's connection (:mod:`.send`), whether a server answers multiRead and one multiRead with its fallback
(:mod:`.multiread`), the pipelined bulk readers (:mod:`.bulk_read`) and bulk creates (:mod:`.bulk`), many
watches set or removed in a few requests (:mod:`.setwatches`), ZooKeeper's failures for everyone else,
classified once (:mod:`.errors`: kazoo's re-exported, the session's and the fence's own, and the groups every
catcher uses), its value vocabulary (:mod:`.types`), the read-modify-CAS helper with in-process ordering per key
(:mod:`.cas`), the race-retry policies on tenacity (:mod:`.retry`), the watched-cache base (:mod:`.watched`),
kazoo's data-watcher table held compactly (:mod:`.watch_table`) and Ctrl-C for the tools raised where neither
kazoo nor an import is in the middle of something (:mod:`.interrupts`).

Who may import it: every other package of the node and ``migrate``'s tools. ``controller.wire`` imports
only this package's error vocabulary, never a session or a writer. This package imports nothing of ours
but ``zkmodel``.
"""
