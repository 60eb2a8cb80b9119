package bolt

import (
	"time"

	bbolt "go.etcd.io/bbolt"
)

// bbolt reads its file through a shared, read-only memory map: every page a
// transaction has read since the map was made stays counted in the process's
// resident memory (RssFile), although it is the kernel's page cache, clean
// and backed by the file. A queue that once held a burst of deliveries, or
// a scan of every record (the start-up resync lists the tracked
// repositories), leaves the whole file resident, long after those pages
// were read last or freed.
//
// Every trimEvery the store drops the map's pages from the process's page
// tables (madvise MADV_DONTNEED, which for a shared file mapping loses
// nothing: the data stays in the file and the page cache). The pages read
// again are mapped again on their next read, from the page cache: the
// resident memory the file adds is then the pages read in the last
// trimEvery, and the kernel may reclaim the rest as any cached file.
const trimEvery = 15 * time.Second

// trim drops the map's resident pages (see trimEvery). The read transaction
// holds the map in place (bbolt cannot remap it meanwhile), so the range
// advised is the map's.
func (b *Store) trim() error {
	return b.db.View(func(tx *bbolt.Tx) error {
		return dropResident(b.db.Info().Data, uintptr(tx.Size()))
	})
}
