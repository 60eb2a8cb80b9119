package bolt_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/app/store/bolt"
)

// mappedKB is how much of the file at path is resident in this process's
// memory through its mappings (/proc/self/smaps), in kB.
func mappedKB(t *testing.T, path string) int {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	kb, in := 0, false
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if strings.Contains(f[0], "-") && len(f) >= 5 { // a mapping's header
			in = f[len(f)-1] == path
			continue
		}
		if in && f[0] == "Rss:" {
			n, _ := strconv.Atoi(f[1])
			kb += n
		}
	}
	return kb
}

// A scan of every record leaves the file resident in the process (bbolt
// reads through a memory map); a trim drops it from the process's resident
// memory, and what is read again comes back, intact.
func TestTrimDropsTheFilesResidentPages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/smaps")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	s := openBolt(t, path)
	ctx := t.Context()
	value := bytes.Repeat([]byte("x"), 4000)
	const n = 2000 // about 8 MB
	for i := range n {
		if err := s.Put(ctx, fmt.Sprintf("task/acme/web#%d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := s.Scan(ctx, "task/")
	if err != nil || len(keys) != n {
		t.Fatalf("scan: %d keys, %v", len(keys), err)
	}
	for _, k := range keys {
		if _, err := s.Get(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	read := mappedKB(t, path)
	if err := bolt.Trim(s); err != nil {
		t.Fatal(err)
	}
	trimmed := mappedKB(t, path)
	t.Logf("the file resident in the process: %d kB after reading every record, %d kB after a trim", read, trimmed)
	if read < n*4 {
		t.Fatalf("only %d kB of the file resident after reading %d records of 4 kB: the test measures nothing", read, n)
	}
	if trimmed > read/10 {
		t.Errorf("%d kB resident after a trim, want under a tenth of %d kB", trimmed, read)
	}
	got, err := s.Get(ctx, keys[n/2])
	if err != nil || !bytes.Equal(got, value) {
		t.Fatalf("a record read after the trim: %d bytes, %v", len(got), err)
	}
}
