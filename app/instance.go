package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/worker"
)

// A process owns the leases it takes under a stable identity
// (COUNTERSIGN_INSTANCE, default the host name: a pod name), so that when it
// restarts after a crash it takes over at once what its predecessor held
// (store.ReleaseOwned) instead of waiting for those leases to expire. Two live
// processes must never share an identity: each process keeps a presence
// lease under its identity, renewed every presenceTTL/3, and a process that
// finds the presence kept by a live process beyond presenceTTL takes over
// nothing and runs under an identity of its own.

// presenceTTL is how long a process's presence outlives its last renewal:
// the longest a restart waits before it takes over.
const presenceTTL = 5 * time.Second

// instanceName is the identity st names, or the host name.
func instanceName(st Settings) string {
	if st.Instance != "" {
		return st.Instance
	}
	if host, err := os.Hostname(); err == nil && host != "" {
		return host
	}
	return "countersign"
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func presenceLease(id string) string { return "instance/" + id }

// takeOver makes this process identity id, once no live process holds it:
// it takes id's presence (waiting for a dead predecessor's to lapse) and
// releases what id held. It returns the identity to own leases under: id,
// or, when a live process keeps id, id with a suffix of this process's own.
// nonce names this process's presence (keepPresence renews it).
func takeOver(ctx context.Context, st store.Store, log *slog.Logger, id string) (owner, nonce string, err error) {
	nonce = fmt.Sprintf("%s/%d/%s", id, os.Getpid(), randomSuffix())
	start := time.Now()
	errs := worker.NewLogLimiter(10 * time.Second)
	for {
		ok, err := st.Lease(ctx, presenceLease(id), nonce, presenceTTL)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return "", "", ctx.Err()
			}
			if show, suppressed := errs.Allow(); show {
				log.Error("store error: cannot take this instance's presence; trying again", "instance", id, "error", err, "suppressed", suppressed)
			}
		case ok:
			n, err := st.ReleaseOwned(ctx, id)
			if err != nil {
				return "", "", fmt.Errorf("take over what instance %q held: %w", id, err)
			}
			log.Info("instance identity taken", "instance", id, "taken_over", n, "waited_ms", time.Since(start).Milliseconds())
			return id, nonce, nil
		case time.Since(start) > presenceTTL+2*time.Second:
			own := id + "/" + randomSuffix()
			log.Error("COUNTERSIGN_INSTANCE is in use by a live process: it must be unique among replicas; running under an identity of this process's own, so a restart of this process will not take over at once",
				"instance", id, "using", own)
			return own, "", nil
		}
		select {
		case <-ctx.Done():
			return "", "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// keepPresence renews id's presence lease until ctx ends, then gives it up
// so that the next start under id need not wait.
func keepPresence(ctx context.Context, st store.Store, log *slog.Logger, id, nonce string) {
	name := presenceLease(id)
	errs := worker.NewLogLimiter(time.Minute)
	for {
		select {
		case <-ctx.Done():
			end, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if _, err := st.ReleaseOwned(end, nonce); err != nil {
				log.Warn("instance presence not given up", "error", err)
			}
			return
		case <-time.After(presenceTTL / 3):
		}
		ok, err := st.Lease(ctx, name, nonce, presenceTTL)
		if (err != nil || !ok) && ctx.Err() == nil {
			if show, suppressed := errs.Allow(); show {
				log.Warn("instance presence not renewed", "error", err, "held_by_another", err == nil && !ok, "suppressed", suppressed)
			}
		}
	}
}
