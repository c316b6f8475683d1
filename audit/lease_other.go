//go:build !unix

package audit

// processAlive cannot check on this platform; leases then only expire.
func processAlive(pid int) bool { return true }
