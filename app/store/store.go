// Package store is countersign's durable state: the delivery queue, the set of
// delivery ids already seen, per-key records (tasks, goals, configs) and the outbox
// of effects still to apply to GitHub.
//
// Work is partitioned by key (for a task, "owner/repo#12"). A key is processed by
// one holder at a time, under a lease that expires when its holder dies, and its
// deliveries are handed out in arrival order. Different keys are processed in
// parallel. Two implementations satisfy Store, each in its own package: bolt
// (embedded, one process) and redisstore (shared by several replicas). What
// both share (input checks, the stored form of a delivery) is in
// internal/backend; storetest holds the conformance suite both must pass.
package store

import (
	"context"
	"errors"
	"time"
)

// SeenTTL is how long a delivery id is remembered for de-duplication.
const SeenTTL = 7 * 24 * time.Hour

var (
	// ErrNotFound is returned by Get for a record that does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrLeaseLost is returned when a claim no longer holds its key: its lease
	// expired (whether or not someone else has claimed the key since) or was given
	// up (Release, Nack, DeadLetter). The caller must stop working on it; the call
	// that returned ErrLeaseLost wrote nothing.
	ErrLeaseLost = errors.New("store: lease lost")
	// ErrInvalid is wrapped by every error that refuses bad input (an empty or
	// overlong id, key or record key): asking again cannot succeed.
	ErrInvalid = errors.New("invalid argument")
)

// Delivery is one accepted webhook delivery (or an internal event derived from
// one), queued under an ordering key. Stores keep it in a binary form
// (internal/backend); the JSON tags read the deliveries earlier versions stored as
// JSON.
type Delivery struct {
	ID    string `json:"id"`    // X-GitHub-Delivery, or a derived id for internal events
	Event string `json:"event"` // X-GitHub-Event, or an internal event name
	Key   string `json:"key"`   // ordering key
	// Action is the payload's "action" when known at intake ("" if unknown or
	// none), so that a delivery countersign does not act on is done with
	// without parsing its payload again.
	Action     string    `json:"action,omitempty"`
	Payload    []byte    `json:"payload"`
	ReceivedAt time.Time `json:"received_at"`
	Attempts   int       `json:"attempts"` // failed processing attempts so far
	LastError  string    `json:"last_error,omitempty"`
	// Interactive: a person waits for it. Queuing it makes its key urgent
	// until the key's queue is empty (see InteractiveLead); it is not kept
	// with the delivery.
	Interactive bool `json:"-"`
}

// InteractiveLead is how far ahead of the others an urgent key (one that
// holds an interactive delivery) is claimed: as if it had become claimable
// that much earlier. Urgent keys therefore go before the keys that became
// claimable less than InteractiveLead before them, and a key that has waited
// longer than that still goes first: background work is delayed, never
// starved. A key delayed by Nack keeps its delay.
const InteractiveLead = 30 * time.Second

// Claim is a lease on one key. Delivery is the head of the key's queue, or nil
// when the key was claimable only because its outbox holds effects still to apply.
type Claim struct {
	Key      string
	Token    string // identifies this lease; a different token means someone else holds the key
	Delivery *Delivery
	Expires  time.Time
	// NoEffects: the key's outbox was empty when it was claimed (only the
	// holder adds to it), so no effect is left over from an earlier attempt.
	// False when not known.
	NoEffects bool
}

// Commit is what processing one delivery writes, atomically, under its claim.
type Commit struct {
	// Records to write (record key -> value). A nil value deletes the record.
	Records map[string][]byte
	// Effects appended to the claimed key's outbox, in order.
	Effects [][]byte
	// Deliveries enqueued (each under its own Key, at the tail of that key's queue),
	// for example a pull-request event fanned out to the tasks it closes. Their ids
	// are de-duplicated like accepted deliveries.
	Enqueue []Delivery
	// PopEffect removes the oldest effect of the claimed key's outbox, as
	// Store.PopEffect does, before Effects are appended: an applied effect
	// leaves the outbox in the same atomic write as the records its
	// application keeps.
	PopEffect bool
}

// Store is the durable state behind the bot. All methods are safe for concurrent use.
type Store interface {
	// Accept records d.ID as seen and queues d at the tail of d.Key's queue, in one
	// durable step. A delivery id already seen within SeenTTL is not queued again:
	// accepted is false and err is nil.
	Accept(ctx context.Context, d Delivery) (accepted bool, err error)

	// Claim leases the key that has waited longest among the keys that have queued
	// deliveries or outbox effects, are not leased, and are not delayed by Nack;
	// an urgent key counts as waiting InteractiveLead longer. It
	// returns (nil, nil) when there is nothing to do. owner names the claimant (for
	// logs and debugging only).
	Claim(ctx context.Context, owner string, ttl time.Duration) (*Claim, error)

	// Renew extends c's lease to ttl from now. ErrLeaseLost if c no longer holds it.
	// c.Expires is left as it was.
	Renew(ctx context.Context, c *Claim, ttl time.Duration) error

	// Commit atomically applies w, removes c.Delivery from the head of the queue
	// (when not nil) and keeps the lease. ErrLeaseLost (and nothing written) if c no
	// longer holds the key. If c.Delivery is no longer at the head of the queue
	// (a second Commit of the same claim), Commit returns another error and
	// writes nothing; Nack and DeadLetter do the same.
	Commit(ctx context.Context, c *Claim, w Commit) error

	// Outbox returns the claimed key's outbox effects, oldest first.
	Outbox(ctx context.Context, c *Claim) ([][]byte, error)
	// PopEffect removes the oldest effect of the claimed key's outbox (after it was
	// applied); nothing if the outbox is empty. Outbox and PopEffect return
	// ErrLeaseLost if c no longer holds the key.
	PopEffect(ctx context.Context, c *Claim) error

	// Release gives up the lease. The key becomes claimable again at once if it has
	// queued deliveries or outbox effects. ErrLeaseLost if c no longer held it.
	Release(ctx context.Context, c *Claim) error

	// Nack records a failed attempt at c.Delivery (Attempts+1, LastError=errMsg),
	// keeps it at the head of its queue, releases the lease and makes the key
	// unclaimable for retryAfter. A Nack of a claim without a delivery charges
	// no attempt: it is a wait (for GitHub, say), remembered as the claim's
	// owner's until the key is claimed again, so that ReleaseOwned can end it.
	Nack(ctx context.Context, c *Claim, errMsg string, retryAfter time.Duration) error

	// Wake makes keys that a Nack delayed claimable now, in the order given:
	// they join the keys already claimable, behind them, each before the next.
	// A key that is leased, not delayed or has no work is left as it is.
	Wake(ctx context.Context, keys ...string) error

	// ReleaseOwned ends what owner held when it stopped: every key lease
	// taken by Claim with owner, every named lease (Lease) owner holds, and
	// every wait owner's Nacks without a delivery started. Their keys become
	// claimable at once. A process calls it at start-up with its own stable
	// identity, so that its dead predecessor's claims are taken up at once
	// instead of when their leases expire; it must never be called with the
	// identity of a live process. It returns how many key leases and waits it
	// ended.
	ReleaseOwned(ctx context.Context, owner string) (int, error)

	// DeadLetter moves c.Delivery from the head of its queue to the dead letters
	// (counting this failed attempt in Attempts, with errMsg as LastError), and releases the lease; the
	// key's later deliveries go on. A dead letter replaces an older one with the
	// same id.
	DeadLetter(ctx context.Context, c *Claim, errMsg string) error
	// DeadLetters lists the dead-lettered deliveries, oldest first.
	DeadLetters(ctx context.Context) ([]Delivery, error)
	// RetryDeadLetter moves the dead letter with that id back to the tail of its
	// key's queue, with Attempts reset (LastError is kept). ErrNotFound if there
	// is none.
	RetryDeadLetter(ctx context.Context, id string) error

	// Get reads a record. ErrNotFound if absent.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put writes a record outside of any claim (for records with no ordering key, such
	// as caches). Task and goal records are written with Commit. A nil val writes
	// an empty record.
	Put(ctx context.Context, key string, val []byte) error
	// PutAll writes several records as Put does, in one durable step.
	PutAll(ctx context.Context, recs map[string][]byte) error
	// Scan returns the keys of all records whose key starts with prefix, sorted.
	Scan(ctx context.Context, prefix string) ([]string, error)
	// Count adds one to the counter key and returns its new value, atomically
	// across every process sharing the store. A counter starts at 1 and lasts
	// window from then; after that it starts again. Counters are not records
	// (Get and Scan do not see them).
	Count(ctx context.Context, key string, window time.Duration) (int64, error)

	// Seen reports whether delivery id was accepted (or enqueued by a Commit)
	// within SeenTTL: the de-duplication Accept applies.
	Seen(ctx context.Context, id string) (bool, error)

	// Lease takes the named lease for owner for ttl, or extends it when owner
	// already holds it. It returns false (and a nil error) while someone else
	// holds it. Leases elect one replica for periodic work (healing,
	// reconciliation); they are independent of the keys' leases.
	Lease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error)

	// Stats reports queue depths, for metrics and readiness.
	Stats(ctx context.Context) (Stats, error)
	// Ping checks the store is reachable and writable.
	Ping(ctx context.Context) error
	Close() error
}

// Stats are gauges of the store's contents.
type Stats struct {
	Queued      int // deliveries waiting in all queues
	Keys        int // keys with queued deliveries or outbox effects
	DeadLetters int
	// Effects are outbox effects recorded and not yet applied, in all keys.
	Effects int
	// Delayed are the keys with work that a Nack made wait (not leased, not
	// yet claimable); NextWake is when the first of them becomes claimable
	// (zero when none is delayed).
	Delayed  int
	NextWake time.Time
}
