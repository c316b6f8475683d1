package daemon

// LockDataDir takes data_dir's lock as a starting daemon does, for a
// command that must not run beside a daemon on the same data (aicr db
// migrate copies the SQLite file: what a live daemon wrote after the
// copy began would be lost). It fails with ErrDataDirLocked while a
// daemon runs there; call release when done.
func LockDataDir(dir string) (release func(), err error) { return lockDataDir(dir) }
