//go:build !linux

package bolt

// dropResident does nothing outside Linux.
func dropResident(addr, n uintptr) error { return nil }
