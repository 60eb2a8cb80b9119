package bolt

import "syscall"

// dropResident advises the kernel that the mapped range [addr, addr+n) is
// not needed (MADV_DONTNEED): its pages leave the process's page tables.
func dropResident(addr, n uintptr) error {
	if addr == 0 || n == 0 {
		return nil
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, n, syscall.MADV_DONTNEED); errno != 0 {
		return errno
	}
	return nil
}
