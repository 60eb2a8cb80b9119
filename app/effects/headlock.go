package effects

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/countersign/countersign/rules"
)

// A check run on a commit has more than one writer: the groups of writes of
// the tasks whose decision changes it (the check goes with the task's label)
// and the commit's own key (decideHead: a pull request's old or shared head,
// a repair, a configuration change). So that the check GitHub shows is never
// older than the records, every write of a verification check holds the
// commit's write lock (one per stripe of commits, in this process and, by a
// store lease, across the replicas sharing the store), and the check is
// worked out under it from the records as they are then (rules.Effect.Latest;
// a check an older version decided is written as it was decided). What the
// run's record remembers (checkrun/..., its digest) then always is what
// GitHub shows: two writers never interleave their write and their record.
// Each write read the records after every write before it, and a decision
// that changes a check carries or queues a write of it, which starts after
// its commit: the last check written answers for the records as they last
// changed.

// HeadChecker works out the check on a commit from the records as they are
// now (nil: none to write); app/decide's Decider.HeadCheck.
type HeadChecker interface {
	HeadCheck(ctx context.Context, inst int64, repo, sha string, number int) (*rules.Effect, error)
}

// checkStripes is how many write locks the commits share: a bounded set of
// lease names, whatever the number of commits.
const checkStripes = 256

// checkLeaseTTL bounds how long a replica that died holding a check's lease
// keeps the others from writing that stripe's checks (its successor's
// take-over releases it at once).
const checkLeaseTTL = 30 * time.Second

// checkLockWait is how long a check write waits for its lock before the
// effect is tried again later.
const checkLockWait = 20 * time.Second

// Heads makes x work out the checks of tasks' decisions with h when it
// applies them, and take the checks' store leases as owner (the process's
// identity: a successor's take-over releases them).
func (x *Executor) Heads(h HeadChecker, owner string) {
	x.heads = h
	x.SetOwner(owner)
}

// SetOwner is the identity the checks' store leases are taken under.
func (x *Executor) SetOwner(owner string) { x.owner.Store(&owner) }

// checkLocks serialises, in this process, the writes of the checks on the
// commits of one stripe.
type checkLocks struct {
	once  sync.Once
	slots [checkStripes]chan struct{}
}

func (l *checkLocks) slot(i uint32) chan struct{} {
	l.once.Do(func() {
		for j := range l.slots {
			l.slots[j] = make(chan struct{}, 1)
		}
	})
	return l.slots[i]
}

// stripeOf is the stripe of the check on repo's commit sha.
func stripeOf(repo, sha string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(repo + "@" + sha))
	return h.Sum32() % checkStripes
}

// lockCheck takes the write lock of the check on repo's commit sha, and
// returns its release.
func (x *Executor) lockCheck(ctx context.Context, repo, sha string) (func(), error) {
	i := stripeOf(repo, sha)
	slot := x.checkLocks.slot(i)
	select {
	case slot <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the check's write lock: %w", ctx.Err())
	}
	owner := x.owner.Load()
	if owner == nil || *owner == "" {
		return func() { <-slot }, nil
	}
	name := fmt.Sprintf("checkrun/%d", i)
	deadline := time.Now().Add(checkLockWait)
	for {
		ok, err := x.store.Lease(ctx, name, *owner, checkLeaseTTL)
		if err != nil {
			<-slot
			return nil, fmt.Errorf("take the check's write lease: %w", err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			<-slot
			return nil, fmt.Errorf("the check on %s@%.12s is being written by another replica", repo, sha)
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			<-slot
			return nil, fmt.Errorf("wait for the check's write lease: %w", ctx.Err())
		}
	}
	// Kept while the write lasts (it may wait for GitHub), ended at once
	// after it.
	bg := context.WithoutCancel(ctx)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(checkLeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(bg, checkLeaseTTL/3)
				if ok, err := x.store.Lease(ctx, name, *owner, checkLeaseTTL); err != nil || !ok {
					x.log.Warn("check write lease not kept", "lease", name, "held", ok, "error", err)
				}
				cancel()
			}
		}
	}()
	return func() {
		close(stop)
		<-stopped
		// Shortened to at once: the lease's end is its release.
		ctx, cancel := context.WithTimeout(bg, 5*time.Second)
		defer cancel()
		if _, err := x.store.Lease(ctx, name, *owner, time.Nanosecond); err != nil {
			x.log.Warn("check write lease not released; it expires by itself", "lease", name, "error", err)
		}
		<-slot
	}, nil
}
