package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/internal/backend"
)

// Store is the embedded store.Store, for a single process. It keeps everything in one
// bbolt file; every write is one fsynced transaction, so what a method reports
// as done survives a crash. Concurrent writes are grouped into shared
// transactions (group commit) so that parallel callers share an fsync; while
// concurrent writes arrive back to back, a write waits up to groupLinger
// (150 µs) for others to join its transaction, which cuts the fsyncs (and their CPU) per
// delivery several times over under load.
//
// Leases are stored in the file like everything else, so the semantics are the
// same as Redis. The file is locked by its process, so leases found when the
// file is opened belong to a process that is gone: Open releases them and a
// restarted process resumes at once.
//
// Layout (bucket: key -> value):
//
//	meta:    ordering key -> keyMeta (JSON): queue and outbox bounds, lease, index entry
//	ready:   be64(availableAt ns) be64(seq) key -> "" — keys with work, by when they become claimable
//	queue:   uvarint(len key) key be64(seq) -> encoded delivery (store/internal/backend)
//	outbox:  uvarint(len key) key be64(seq) -> effect
//	seen:    delivery id -> be64(seen at ns)
//	seenexp: be64(seen at ns) id -> "" — for purging expired seen ids in order
//	dead:    be64(seq) -> encoded delivery;  deadid: delivery id -> be64(seq)
//	records: record key -> 0x01 value
//	stats:   counter name -> be64
type Store struct {
	db      *bbolt.DB
	path    string
	seenTTL time.Duration
	now     func() time.Time

	reqs      chan *boltReq
	quit      chan struct{}
	loopDone  chan struct{}
	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

var (
	bktMeta    = []byte("meta")
	bktReady   = []byte("ready")
	bktQueue   = []byte("queue")
	bktOutbox  = []byte("outbox")
	bktSeen    = []byte("seen")
	bktSeenExp = []byte("seenexp")
	bktLeases  = []byte("leases")
	bktDead    = []byte("dead")
	bktDeadID  = []byte("deadid")
	bktRecords = []byte("records")
	bktStats   = []byte("stats")
	bktCounter = []byte("counters")

	allBuckets = [][]byte{bktMeta, bktReady, bktQueue, bktOutbox, bktSeen, bktSeenExp, bktDead, bktDeadID, bktRecords, bktStats, bktCounter, bktLeases}

	statQueued = []byte("queued")
	statKeys   = []byte("keys")
	statDead   = []byte("dead")
	statPing   = []byte("ping")
)

const (
	boltLockTimeout = 3 * time.Second
	// seenPurgeBatch bounds how many expired seen ids one write purges.
	seenPurgeBatch = 64
	// maxGroup bounds how many writes share one transaction.
	maxGroup = 256
	// groupLinger is how long a write waits for others to share its commit
	// while writes arrive back to back.
	groupLinger = 150 * time.Microsecond
)

// Open opens (creating it and its directory if needed) the bbolt file at path.
// It fails after a few seconds, instead of hanging, if another process has the
// file open.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, backend.Invalidf("empty bolt path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: create directory for %s: %w", path, err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: boltLockTimeout})
	if err != nil {
		if errors.Is(err, bbolt.ErrTimeout) {
			return nil, fmt.Errorf("store: open %s: file is locked, is another countersign process using it? (%w)", path, err)
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	b := &Store{
		db:       db,
		path:     path,
		seenTTL:  store.SeenTTL,
		now:      time.Now,
		reqs:     make(chan *boltReq),
		quit:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return b.releaseStaleLeases(tx)
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: initialize %s: %w", path, err)
	}
	go b.loop()
	return b, nil
}

// releaseStaleLeases drops every lease found at open: we hold the file lock, so
// their holders are dead. Their keys become claimable at once.
func (b *Store) releaseStaleLeases(tx *bbolt.Tx) error {
	// Named leases (Lease) too: their holders are dead.
	if err := tx.DeleteBucket(bktLeases); err != nil && !errors.Is(err, bbolt.ErrBucketNotFound) {
		return err
	}
	if _, err := tx.CreateBucket(bktLeases); err != nil {
		return err
	}
	var keys []string
	err := tx.Bucket(bktMeta).ForEach(func(k, v []byte) error {
		var m keyMeta
		if err := decodeMeta(v, &m); err != nil {
			return fmt.Errorf("decode meta of %q: %w", k, err)
		}
		if m.Token != "" {
			keys = append(keys, string(k))
		}
		return nil
	})
	if err != nil || len(keys) == 0 {
		return err
	}
	t := b.newTx(tx)
	for _, k := range keys {
		m, err := t.meta(k)
		if err != nil {
			return err
		}
		m.clearLease()
		t.unindex(m) // re-added "now" by flush if the key has work
	}
	return t.flush()
}

// ---- group commit ----

type boltReq struct {
	fn   func(*bbolt.Tx) error
	done chan error
}

var errBoltClosed = errors.New("store: bolt store is closed")

// update runs fn in a write transaction, possibly shared with other callers'
// functions. fn may run more than once (the shared transaction is rolled back
// and fn re-run alone if another function in it fails), so it must only
// communicate through variables it assigns on every run. Any error from fn
// means nothing of fn was committed.
func (b *Store) update(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &boltReq{fn: fn, done: make(chan error, 1)}
	select {
	case b.reqs <- r:
	case <-b.quit:
		return errBoltClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once handed over the write will happen; wait for its outcome even if ctx
	// ends, so that the caller learns what was done.
	return <-r.done
}

func (b *Store) loop() {
	defer close(b.loopDone)
	var (
		linger *time.Timer
		last   time.Time
		shared bool
	)
	// The file's pages read at start (stale leases, the wake index) are
	// dropped at once, then every trimEvery (trim.go).
	_ = b.trim()
	trimmer := time.NewTicker(trimEvery)
	defer trimmer.Stop()
	for {
		var first *boltReq
		select {
		case first = <-b.reqs:
		case <-trimmer.C:
			_ = b.trim() // only advice: nothing to do if it fails
			continue
		case <-b.quit:
			return
		}
		// Under load, writes arrive together (the last commit was shared) and
		// the next one comes moments after the last commit. A lone writer
		// (writes one after the other) never waits.
		busy := shared && time.Since(last) < groupLinger
		group := []*boltReq{first}
	drain:
		for len(group) < maxGroup {
			select {
			case r := <-b.reqs:
				group = append(group, r)
			default:
				break drain
			}
		}
		// Under load, wait a little for more writes to share this commit's
		// fsyncs.
		if busy && len(group) < maxGroup {
			if linger == nil {
				linger = time.NewTimer(groupLinger)
			} else {
				linger.Reset(groupLinger)
			}
		wait:
			for len(group) < maxGroup {
				select {
				case r := <-b.reqs:
					group = append(group, r)
				case <-linger.C:
					break wait
				}
			}
			linger.Stop()
		}
		b.runGroup(group)
		last, shared = time.Now(), len(group) > 1
	}
}

func (b *Store) runGroup(group []*boltReq) {
	for len(group) > 0 {
		if len(group) == 1 {
			group[0].done <- b.db.Update(group[0].fn)
			return
		}
		failed := -1
		err := b.db.Update(func(tx *bbolt.Tx) error {
			for i, r := range group {
				if err := r.fn(tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if err == nil {
			for _, r := range group {
				r.done <- nil
			}
			return
		}
		if failed < 0 { // the commit itself failed
			for _, r := range group {
				r.done <- err
			}
			return
		}
		// Everything was rolled back: run the failing function alone, then the
		// others together again.
		bad := group[failed]
		bad.done <- b.db.Update(bad.fn)
		group = append(group[:failed:failed], group[failed+1:]...)
	}
}

// ---- per-transaction state ----

// keyMeta is the state of one ordering key. It exists while the key has queued
// deliveries, outbox effects or a live lease.
type keyMeta struct {
	QHead    uint64 `json:"qh,omitempty"` // queue holds seqs [QHead, QTail)
	QTail    uint64 `json:"qt,omitempty"`
	OHead    uint64 `json:"oh,omitempty"` // outbox holds seqs [OHead, OTail)
	OTail    uint64 `json:"ot,omitempty"`
	Token    string `json:"tok,omitempty"`
	Owner    string `json:"own,omitempty"`
	LeaseExp int64  `json:"exp,omitempty"`   // ns since epoch
	Ready    []byte `json:"ready,omitempty"` // our entry in the ready index, nil if none
	// Parked is the owner whose Nack without a delivery (a wait) delays the
	// key, until it is claimed again (ReleaseOwned ends such waits).
	Parked string `json:"park,omitempty"`
	Urgent bool   `json:"urg,omitempty"` // an interactive delivery is queued (store.InteractiveLead)

	key        string
	wasIndexed bool
}

func (m *keyMeta) hasWork() bool         { return m.QTail > m.QHead || m.OTail > m.OHead }
func (m *keyMeta) leased(now int64) bool { return m.Token != "" && m.LeaseExp > now }
func (m *keyMeta) holds(tok string, now int64) bool {
	return tok != "" && m.Token == tok && m.LeaseExp > now
}
func (m *keyMeta) clearLease() { m.Token, m.Owner, m.LeaseExp = "", "", 0 }

// btx is one logical operation inside a (possibly shared) write transaction.
type btx struct {
	tx                *bbolt.Tx
	b                 *Store
	now               int64
	metas             map[string]*keyMeta
	order             []*keyMeta
	dQueued, dDead    int64
	metaB, ready, q   *bbolt.Bucket
	out, seen, seenEx *bbolt.Bucket
}

func (b *Store) newTx(tx *bbolt.Tx) *btx {
	return &btx{
		tx: tx, b: b, now: b.now().UnixNano(), metas: map[string]*keyMeta{},
		metaB: tx.Bucket(bktMeta), ready: tx.Bucket(bktReady), q: tx.Bucket(bktQueue),
		out: tx.Bucket(bktOutbox), seen: tx.Bucket(bktSeen), seenEx: tx.Bucket(bktSeenExp),
	}
}

func (t *btx) meta(key string) (*keyMeta, error) {
	if m, ok := t.metas[key]; ok {
		return m, nil
	}
	m := &keyMeta{}
	if v := t.metaB.Get([]byte(key)); v != nil {
		if err := decodeMeta(v, m); err != nil {
			return nil, fmt.Errorf("decode meta of %q: %w", key, err)
		}
	}
	m.key = key
	m.wasIndexed = m.Ready != nil
	t.metas[key] = m
	t.order = append(t.order, m)
	return m, nil
}

func (t *btx) unindex(m *keyMeta) error {
	if m.Ready == nil {
		return nil
	}
	err := t.ready.Delete(m.Ready)
	m.Ready = nil
	return err
}

func (t *btx) index(m *keyMeta, at int64) error {
	if err := t.unindex(m); err != nil {
		return err
	}
	seq, err := t.ready.NextSequence()
	if err != nil {
		return err
	}
	k := make([]byte, 16, 16+len(m.key))
	binary.BigEndian.PutUint64(k, uint64(max(at, 0)))
	binary.BigEndian.PutUint64(k[8:], seq)
	k = append(k, m.key...)
	m.Ready = k
	return t.ready.Put(k, nil)
}

// flush makes the ready index agree with each touched key (indexed iff it has
// work; a new entry is available at lease expiry if leased, else now), saves or
// deletes the metas and updates the counters.
func (t *btx) flush() error {
	var dKeys int64
	for _, m := range t.order {
		if m.QTail <= m.QHead {
			m.Urgent = false
		}
		if !m.hasWork() {
			if err := t.unindex(m); err != nil {
				return err
			}
		} else if m.Ready == nil {
			at := t.now
			if m.leased(t.now) {
				at = m.LeaseExp
			} else if m.Urgent {
				at -= int64(store.InteractiveLead)
			}
			if err := t.index(m, at); err != nil {
				return err
			}
		}
		if m.wasIndexed != (m.Ready != nil) {
			if m.Ready != nil {
				dKeys++
			} else {
				dKeys--
			}
		}
		m.wasIndexed = m.Ready != nil
		if !m.hasWork() && !m.leased(t.now) {
			if err := t.metaB.Delete([]byte(m.key)); err != nil {
				return err
			}
			continue
		}
		v, err := encodeMeta(m)
		if err != nil {
			return err
		}
		if err := t.metaB.Put([]byte(m.key), v); err != nil {
			return err
		}
	}
	st := t.tx.Bucket(bktStats)
	for _, c := range []struct {
		name []byte
		d    int64
	}{{statQueued, t.dQueued}, {statKeys, dKeys}, {statDead, t.dDead}} {
		if c.d == 0 {
			continue
		}
		if err := st.Put(c.name, be64(uint64(max(getCounter(st, c.name)+c.d, 0)))); err != nil {
			return err
		}
	}
	t.dQueued, t.dDead = 0, 0
	return nil
}

func getCounter(st *bbolt.Bucket, name []byte) int64 {
	v := st.Get(name)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func be64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// itemKey is the queue/outbox key of entry seq of key.
func itemKey(key string, seq uint64) []byte {
	k := binary.AppendUvarint(make([]byte, 0, len(key)+18), uint64(len(key)))
	k = append(k, key...)
	return binary.BigEndian.AppendUint64(k, seq)
}

// isSeen reports whether id was seen within the seen TTL.
func (t *btx) isSeen(id string) bool {
	v := t.seen.Get([]byte(id))
	if len(v) != 8 {
		return false
	}
	return t.now-int64(binary.BigEndian.Uint64(v)) < int64(t.b.seenTTL)
}

func (t *btx) markSeen(id string) error {
	ts := be64(uint64(t.now))
	if err := t.seen.Put([]byte(id), ts); err != nil {
		return err
	}
	ek := make([]byte, 0, 8+len(id))
	ek = append(append(ek, ts...), id...)
	return t.seenEx.Put(ek, nil)
}

// purgeSeen forgets up to limit ids seen longer than the seen TTL ago.
func (t *btx) purgeSeen(limit int) error {
	cutoff := t.now - int64(t.b.seenTTL)
	var del [][]byte
	c := t.seenEx.Cursor()
	for k, _ := c.First(); k != nil && len(del) < limit; k, _ = c.Next() {
		if len(k) < 8 || int64(binary.BigEndian.Uint64(k)) > cutoff {
			break
		}
		del = append(del, bytes.Clone(k))
	}
	for _, k := range del {
		id := k[8:]
		// Only forget the id if it was not seen again since.
		if v := t.seen.Get(id); bytes.Equal(v, k[:8]) {
			if err := t.seen.Delete(id); err != nil {
				return err
			}
		}
		if err := t.seenEx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// push appends an encoded delivery to the tail of key's queue.
func (t *btx) push(key string, raw []byte) error {
	m, err := t.meta(key)
	if err != nil {
		return err
	}
	if err := t.q.Put(itemKey(key, m.QTail), raw); err != nil {
		return err
	}
	m.QTail++
	t.dQueued++
	return nil
}

// enqueue is push with de-duplication; it reports whether d was queued. An
// interactive delivery makes its key urgent: claimable InteractiveLead
// earlier than now, unless it is leased or delayed.
func (t *btx) enqueue(id, key string, raw []byte, interactive bool) (bool, error) {
	if t.isSeen(id) {
		return false, nil
	}
	if err := t.markSeen(id); err != nil {
		return false, err
	}
	if err := t.push(key, raw); err != nil {
		return false, err
	}
	if !interactive {
		return true, nil
	}
	m, err := t.meta(key)
	if err != nil {
		return false, err
	}
	m.Urgent = true
	if at := t.now - int64(store.InteractiveLead); m.Ready != nil && len(m.Ready) >= 16 && !m.leased(t.now) &&
		int64(binary.BigEndian.Uint64(m.Ready)) <= t.now && int64(binary.BigEndian.Uint64(m.Ready)) > at {
		return true, t.index(m, at)
	}
	return true, nil
}

func (t *btx) head(m *keyMeta) []byte {
	if m.QTail <= m.QHead {
		return nil
	}
	return t.q.Get(itemKey(m.key, m.QHead))
}

func (t *btx) popHead(m *keyMeta) error {
	if err := t.q.Delete(itemKey(m.key, m.QHead)); err != nil {
		return err
	}
	m.QHead++
	t.dQueued--
	return nil
}

// holder loads c.Key's meta and checks that c still holds its lease.
func (t *btx) holder(c *store.Claim) (*keyMeta, error) {
	m, err := t.meta(c.Key)
	if err != nil {
		return nil, err
	}
	if !m.holds(c.Token, t.now) {
		return nil, store.ErrLeaseLost
	}
	return m, nil
}

// checkHead verifies that c.Delivery (if any) is still the head of m's queue.
func (t *btx) checkHead(c *store.Claim, m *keyMeta) ([]byte, error) {
	if c.Delivery == nil {
		return nil, nil
	}
	raw := t.head(m)
	if !backend.IsHead(raw, c.Delivery.ID) {
		return nil, backend.ErrNotHead(c)
	}
	return raw, nil
}

// write runs op in a write transaction and flushes its state.
func (b *Store) write(ctx context.Context, op func(t *btx) error) error {
	return b.update(ctx, func(tx *bbolt.Tx) error {
		t := b.newTx(tx)
		if err := op(t); err != nil {
			return err
		}
		return t.flush()
	})
}

func wrapBolt(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: bolt %s: %w", op, err)
}

// ---- Store ----

// Accept implements Store.
func (b *Store) Accept(ctx context.Context, d store.Delivery) (bool, error) {
	if err := backend.CheckDelivery(&d); err != nil {
		return false, err
	}
	raw, err := backend.EncodeDelivery(d, b.now())
	if err != nil {
		return false, err
	}
	var accepted bool
	err = b.write(ctx, func(t *btx) error {
		var err error
		if accepted, err = t.enqueue(d.ID, d.Key, raw, d.Interactive); err != nil {
			return err
		}
		return t.purgeSeen(seenPurgeBatch)
	})
	if err != nil {
		return false, wrapBolt(fmt.Sprintf("accept %q", d.ID), err)
	}
	return accepted, nil
}

// Claim implements Store.
func (b *Store) Claim(ctx context.Context, owner string, ttl time.Duration) (*store.Claim, error) {
	ttl, err := backend.CheckTTL(ttl)
	if err != nil {
		return nil, err
	}
	// Idle claimers poll: answer "nothing" from a read transaction instead of
	// paying for a write (and its fsync). The write transaction checks again.
	if idle, err := b.nothingReady(); err != nil || idle {
		return nil, wrapBolt("claim", err)
	}
	tok, err := backend.NewToken()
	if err != nil {
		return nil, err
	}
	var claim *store.Claim
	err = b.write(ctx, func(t *btx) error {
		claim = nil
		// Each pass either claims, stops, or repairs one inconsistent entry.
		for range 1000 {
			k, _ := t.ready.Cursor().First()
			if k == nil || len(k) < 16 || int64(binary.BigEndian.Uint64(k)) > t.now {
				if k != nil && len(k) < 16 {
					if err := t.ready.Delete(bytes.Clone(k)); err != nil {
						return err
					}
					continue
				}
				return nil
			}
			m, err := t.meta(string(k[16:]))
			if err != nil {
				return err
			}
			switch {
			case !bytes.Equal(m.Ready, k): // stray entry
				if err := t.ready.Delete(bytes.Clone(k)); err != nil {
					return err
				}
			case !m.hasWork():
				if err := t.unindex(m); err != nil {
					return err
				}
			case m.leased(t.now):
				if err := t.index(m, m.LeaseExp); err != nil {
					return err
				}
			default:
				m.Token, m.Owner, m.LeaseExp, m.Parked = tok, owner, t.now+int64(ttl), ""
				if err := t.index(m, m.LeaseExp); err != nil {
					return err
				}
				c := &store.Claim{Key: m.key, Token: tok, Expires: time.Unix(0, m.LeaseExp), NoEffects: m.OTail <= m.OHead}
				if raw := t.head(m); raw != nil {
					if c.Delivery, err = backend.DecodeDelivery(raw); err != nil {
						return err
					}
				}
				claim = c
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrapBolt("claim", err)
	}
	return claim, nil
}

// nothingReady reports whether the ready index has no key available now.
func (b *Store) nothingReady() (bool, error) {
	var idle bool
	err := b.db.View(func(tx *bbolt.Tx) error {
		k, _ := tx.Bucket(bktReady).Cursor().First()
		idle = k == nil || (len(k) >= 16 && int64(binary.BigEndian.Uint64(k)) > b.now().UnixNano())
		return nil
	})
	return idle, err
}

// Renew implements Store.
func (b *Store) Renew(ctx context.Context, c *store.Claim, ttl time.Duration) error {
	if err := backend.CheckClaim(c); err != nil {
		return err
	}
	ttl, err := backend.CheckTTL(ttl)
	if err != nil {
		return err
	}
	err = b.write(ctx, func(t *btx) error {
		m, err := t.holder(c)
		if err != nil {
			return err
		}
		m.LeaseExp = t.now + int64(ttl)
		if m.Ready != nil {
			return t.index(m, m.LeaseExp)
		}
		return nil
	})
	return wrapBolt(fmt.Sprintf("renew %q", c.Key), err)
}

// Commit implements Store.
func (b *Store) Commit(ctx context.Context, c *store.Claim, w store.Commit) error {
	if err := backend.CheckClaim(c); err != nil {
		return err
	}
	enc, err := backend.CheckCommit(&w, b.now())
	if err != nil {
		return err
	}
	err = b.write(ctx, func(t *btx) error {
		m, err := t.holder(c)
		if err != nil {
			return err
		}
		if _, err := t.checkHead(c, m); err != nil {
			return err
		}
		recs := t.tx.Bucket(bktRecords)
		for k, v := range w.Records {
			if v == nil {
				err = recs.Delete([]byte(k))
			} else {
				err = recs.Put([]byte(k), append([]byte{1}, v...))
			}
			if err != nil {
				return err
			}
		}
		if w.PopEffect && m.OTail > m.OHead {
			if err := t.out.Delete(itemKey(m.key, m.OHead)); err != nil {
				return err
			}
			m.OHead++
		}
		for _, e := range w.Effects {
			if err := t.out.Put(itemKey(m.key, m.OTail), append([]byte{}, e...)); err != nil {
				return err
			}
			m.OTail++
		}
		if c.Delivery != nil {
			if err := t.popHead(m); err != nil {
				return err
			}
		}
		for i, d := range w.Enqueue {
			if _, err := t.enqueue(d.ID, d.Key, enc[i], d.Interactive); err != nil {
				return err
			}
		}
		return t.purgeSeen(seenPurgeBatch)
	})
	return wrapBolt(fmt.Sprintf("commit %q", keyOf(c)), err)
}

func keyOf(c *store.Claim) string {
	if c == nil {
		return ""
	}
	return c.Key
}

// Outbox implements Store.
func (b *Store) Outbox(ctx context.Context, c *store.Claim) ([][]byte, error) {
	if err := backend.CheckClaim(c); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var effects [][]byte
	err := b.db.View(func(tx *bbolt.Tx) error {
		t := b.newTx(tx)
		m, err := t.holder(c)
		if err != nil {
			return err
		}
		effects = make([][]byte, 0, m.OTail-m.OHead)
		for seq := m.OHead; seq < m.OTail; seq++ {
			if v := t.out.Get(itemKey(m.key, seq)); v != nil {
				effects = append(effects, bytes.Clone(v))
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrapBolt(fmt.Sprintf("outbox %q", c.Key), err)
	}
	return effects, nil
}

// PopEffect implements Store.
func (b *Store) PopEffect(ctx context.Context, c *store.Claim) error {
	if err := backend.CheckClaim(c); err != nil {
		return err
	}
	err := b.write(ctx, func(t *btx) error {
		m, err := t.holder(c)
		if err != nil {
			return err
		}
		if m.OTail <= m.OHead {
			return nil
		}
		if err := t.out.Delete(itemKey(m.key, m.OHead)); err != nil {
			return err
		}
		m.OHead++
		return nil
	})
	return wrapBolt(fmt.Sprintf("pop effect %q", c.Key), err)
}

// Release implements Store.
func (b *Store) Release(ctx context.Context, c *store.Claim) error {
	if err := backend.CheckClaim(c); err != nil {
		return err
	}
	err := b.write(ctx, func(t *btx) error {
		m, err := t.holder(c)
		if err != nil {
			return err
		}
		m.clearLease()
		return t.unindex(m) // flush re-indexes it "now" if it has work
	})
	return wrapBolt(fmt.Sprintf("release %q", c.Key), err)
}

// Nack implements Store.
func (b *Store) Nack(ctx context.Context, c *store.Claim, errMsg string, retryAfter time.Duration) error {
	if err := backend.CheckClaim(c); err != nil {
		return err
	}
	retryAfter = backend.ClampDelay(retryAfter)
	err := b.write(ctx, func(t *btx) error {
		m, d, nb, err := t.failHead(c, errMsg)
		if err != nil {
			return err
		}
		if d != nil {
			if err := t.q.Put(itemKey(m.key, m.QHead), nb); err != nil {
				return err
			}
		} else if c.Delivery == nil {
			m.Parked = m.Owner // a wait, ended early by ReleaseOwned
		}
		m.clearLease()
		if m.hasWork() {
			return t.index(m, t.now+int64(retryAfter))
		}
		return t.unindex(m)
	})
	return wrapBolt(fmt.Sprintf("nack %q", c.Key), err)
}

// DeadLetter implements Store.
func (b *Store) DeadLetter(ctx context.Context, c *store.Claim, errMsg string) error {
	if err := backend.CheckClaim(c); err != nil {
		return err
	}
	err := b.write(ctx, func(t *btx) error {
		m, d, nb, err := t.failHead(c, errMsg)
		if err != nil {
			return err
		}
		if d != nil {
			if err := t.popHead(m); err != nil {
				return err
			}
			if err := t.addDead(d.ID, nb); err != nil {
				return err
			}
		}
		m.clearLease()
		return t.unindex(m)
	})
	return wrapBolt(fmt.Sprintf("dead letter %q", c.Key), err)
}

// failHead is the key c holds and, when c claimed a delivery, that delivery
// with one more attempt that failed with errMsg (d, and nb encoded); d is
// nil for a claim of no delivery.
func (t *btx) failHead(c *store.Claim, errMsg string) (m *keyMeta, d *store.Delivery, nb []byte, err error) {
	if m, err = t.holder(c); err != nil {
		return nil, nil, nil, err
	}
	raw, err := t.checkHead(c, m)
	if err != nil || raw == nil {
		return m, nil, nil, err
	}
	if d, err = backend.DecodeDelivery(raw); err != nil {
		return nil, nil, nil, err
	}
	d.Attempts++
	d.LastError = errMsg
	if nb, err = backend.EncodeDelivery(*d, time.Unix(0, t.now)); err != nil {
		return nil, nil, nil, err
	}
	return m, d, nb, nil
}

// addDead stores a dead letter; one with the same id replaces the older one.
func (t *btx) addDead(id string, raw []byte) error {
	dead, ids := t.tx.Bucket(bktDead), t.tx.Bucket(bktDeadID)
	if old := ids.Get([]byte(id)); old != nil {
		if err := dead.Delete(bytes.Clone(old)); err != nil {
			return err
		}
		t.dDead--
	}
	seq, err := dead.NextSequence()
	if err != nil {
		return err
	}
	if err := dead.Put(be64(seq), raw); err != nil {
		return err
	}
	t.dDead++
	return ids.Put([]byte(id), be64(seq))
}

// DeadLetters implements Store.
func (b *Store) DeadLetters(ctx context.Context) ([]store.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []store.Delivery
	err := b.db.View(func(tx *bbolt.Tx) error {
		out = nil
		return tx.Bucket(bktDead).ForEach(func(_, v []byte) error {
			d, err := backend.DecodeDelivery(v)
			if err != nil {
				return err
			}
			out = append(out, *d)
			return nil
		})
	})
	if err != nil {
		return nil, wrapBolt("dead letters", err)
	}
	return out, nil
}

// RetryDeadLetter implements Store.
func (b *Store) RetryDeadLetter(ctx context.Context, id string) error {
	err := b.write(ctx, func(t *btx) error {
		dead, ids := t.tx.Bucket(bktDead), t.tx.Bucket(bktDeadID)
		seq := ids.Get([]byte(id))
		if seq == nil || id == "" {
			return store.ErrNotFound
		}
		seq = bytes.Clone(seq)
		raw := dead.Get(seq)
		if raw == nil {
			return store.ErrNotFound
		}
		d, err := backend.DecodeDelivery(raw)
		if err != nil {
			return err
		}
		d.Attempts = 0
		nb, err := backend.EncodeDelivery(*d, time.Unix(0, t.now))
		if err != nil {
			return err
		}
		if err := dead.Delete(seq); err != nil {
			return err
		}
		if err := ids.Delete([]byte(id)); err != nil {
			return err
		}
		t.dDead--
		if backend.CheckDelivery(d) != nil {
			return fmt.Errorf("dead letter %q has an invalid key", id)
		}
		return t.push(d.Key, nb)
	})
	return wrapBolt(fmt.Sprintf("retry dead letter %q", id), err)
}

// Get implements Store.
func (b *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if backend.CheckRecordKey(key) != nil {
		return nil, store.ErrNotFound
	}
	var val []byte
	err := b.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bktRecords).Get([]byte(key))
		if len(v) == 0 {
			return store.ErrNotFound
		}
		val = bytes.Clone(v[1:])
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, wrapBolt(fmt.Sprintf("get %q", key), err)
	}
	return val, nil
}

// Put implements Store. A nil val writes an empty record.
func (b *Store) Put(ctx context.Context, key string, val []byte) error {
	if err := backend.CheckRecordKey(key); err != nil {
		return err
	}
	v := append([]byte{1}, val...)
	err := b.update(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(bktRecords).Put([]byte(key), v)
	})
	return wrapBolt(fmt.Sprintf("put %q", key), err)
}

// PutAll implements Store: one transaction.
func (b *Store) PutAll(ctx context.Context, recs map[string][]byte) error {
	for k := range recs {
		if err := backend.CheckRecordKey(k); err != nil {
			return err
		}
	}
	err := b.update(ctx, func(tx *bbolt.Tx) error {
		bk := tx.Bucket(bktRecords)
		for k, v := range recs {
			if err := bk.Put([]byte(k), append([]byte{1}, v...)); err != nil {
				return err
			}
		}
		return nil
	})
	return wrapBolt(fmt.Sprintf("put %d records", len(recs)), err)
}

// Scan implements Store.
func (b *Store) Scan(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var keys []string
	err := b.db.View(func(tx *bbolt.Tx) error {
		keys = nil
		p := []byte(prefix)
		c := tx.Bucket(bktRecords).Cursor()
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			keys = append(keys, string(k))
		}
		return nil
	})
	if err != nil {
		return nil, wrapBolt("scan", err)
	}
	return keys, nil
}

// counterPurgeBatch bounds how many expired counters one Count deletes.
const counterPurgeBatch = 16

// Count implements Store. A counter is 16 bytes: its value, then when its
// window ends (Unix nanoseconds), both big-endian.
func (b *Store) Count(ctx context.Context, key string, window time.Duration) (int64, error) {
	if err := backend.CheckRecordKey(key); err != nil {
		return 0, err
	}
	if window <= 0 {
		return 0, backend.Invalidf("counter window %v: must be positive", window)
	}
	var n int64
	err := b.update(ctx, func(tx *bbolt.Tx) error {
		bk := tx.Bucket(bktCounter)
		now := b.now().UnixNano()
		end := now + int64(window)
		n = 1
		if v := bk.Get([]byte(key)); len(v) == 16 {
			if e := int64(binary.BigEndian.Uint64(v[8:])); e > now {
				n, end = int64(binary.BigEndian.Uint64(v[:8]))+1, e
			}
		}
		purged := 0
		c := bk.Cursor()
		for k, v := c.First(); k != nil && purged < counterPurgeBatch; k, v = c.Next() {
			if len(v) == 16 && int64(binary.BigEndian.Uint64(v[8:])) <= now && string(k) != key {
				if err := c.Delete(); err != nil {
					return err
				}
				purged++
			}
		}
		v := make([]byte, 16)
		binary.BigEndian.PutUint64(v, uint64(n))
		binary.BigEndian.PutUint64(v[8:], uint64(end))
		return bk.Put([]byte(key), v)
	})
	if err != nil {
		return 0, wrapBolt(fmt.Sprintf("count %q", key), err)
	}
	return n, nil
}

// Stats implements Store.
func (b *Store) Stats(ctx context.Context) (store.Stats, error) {
	if err := ctx.Err(); err != nil {
		return store.Stats{}, err
	}
	var s store.Stats
	err := b.db.View(func(tx *bbolt.Tx) error {
		st := tx.Bucket(bktStats)
		s = store.Stats{
			Queued:      int(getCounter(st, statQueued)),
			Keys:        int(getCounter(st, statKeys)),
			DeadLetters: int(getCounter(st, statDead)),
		}
		return b.pending(tx, &s)
	})
	if err != nil {
		return store.Stats{}, wrapBolt("stats", err)
	}
	return s, nil
}

// Ping implements Store: it commits a tiny write.
func (b *Store) Ping(ctx context.Context) error {
	err := b.update(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(bktStats).Put(statPing, be64(uint64(b.now().UnixNano())))
	})
	return wrapBolt("ping", err)
}

// Close implements Store. It waits for writes in progress; later calls fail.
func (b *Store) Close() error {
	b.closeOnce.Do(func() {
		close(b.quit)
		<-b.loopDone
		if err := b.db.Close(); err != nil {
			b.closeErr = fmt.Errorf("store: close %s: %w", b.path, err)
		}
	})
	return b.closeErr
}

// Seen implements Store.
func (b *Store) Seen(ctx context.Context, id string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if backend.CheckName("delivery id", id) != nil {
		return false, nil
	}
	var seen bool
	err := b.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bktSeen).Get([]byte(id))
		seen = len(v) == 8 && b.now().UnixNano()-int64(binary.BigEndian.Uint64(v)) < int64(b.seenTTL)
		return nil
	})
	if err != nil {
		return false, wrapBolt(fmt.Sprintf("seen %q", id), err)
	}
	return seen, nil
}

// Lease implements Store. A lease is kept as owner NUL be64(expiry ns).
func (b *Store) Lease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if err := backend.CheckName("lease name", name); err != nil {
		return false, err
	}
	if err := backend.CheckName("lease owner", owner); err != nil {
		return false, err
	}
	if ttl <= 0 || ttl > backend.MaxDuration {
		return false, backend.Invalidf("lease ttl %v out of range", ttl)
	}
	var got bool
	err := b.update(ctx, func(tx *bbolt.Tx) error {
		bk := tx.Bucket(bktLeases)
		now := b.now().UnixNano()
		if v := bk.Get([]byte(name)); len(v) > 8 {
			holder, exp := string(v[:len(v)-9]), int64(binary.BigEndian.Uint64(v[len(v)-8:]))
			if holder != owner && exp > now {
				return nil
			}
		}
		got = true
		v := append([]byte(owner+"\x00"), be64(uint64(now+int64(ttl)))...)
		return bk.Put([]byte(name), v)
	})
	if err != nil {
		return false, wrapBolt(fmt.Sprintf("lease %q", name), err)
	}
	return got, nil
}
