package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/redisstore"
	"github.com/countersign/countersign/app/store/redistest"
	"github.com/countersign/countersign/app/store/storetest"
)

var prefixSeq atomic.Int64

// uniquePrefix isolates one test's keys on a shared server.
func uniquePrefix() string {
	return fmt.Sprintf("cs-test-%d:", prefixSeq.Add(1))
}

func openRedis(t testing.TB, url, prefix string) *redisstore.Store {
	t.Helper()
	s, err := redisstore.Open(context.Background(), url, redisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatalf("redisstore.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestRedis(t *testing.T) {
	t.Parallel()
	url := redistest.Start(t)
	storetest.Run(t,
		func(t *testing.T) store.Store { return openRedis(t, url, uniquePrefix()) },
		storetest.WithReopen(func(t *testing.T) (store.Store, func(t *testing.T) store.Store) {
			prefix := uniquePrefix()
			return openRedis(t, url, prefix), func(t *testing.T) store.Store { return openRedis(t, url, prefix) }
		}),
	)
}

// Two replicas (separate clients) race on the same keys.
// Deliveries queued by a version that stored them as JSON (the payload base64
// inside) are claimed, committed, nacked and dead-lettered by this one.
func TestRedisLegacyDeliveriesAfterUpgrade(t *testing.T) {
	t.Parallel()
	s := openRedis(t, redistest.Start(t), uniquePrefix())
	storetest.LegacyDeliveries(t, s, func(ctx context.Context, d store.Delivery) (bool, error) {
		return redisstore.AcceptLegacy(ctx, s, d)
	})
}

func TestRedisTwoReplicas(t *testing.T) {
	t.Parallel()
	url := redistest.Start(t)
	t.Run("clean", func(t *testing.T) {
		t.Parallel()
		prefix := uniquePrefix()
		storetest.Race(t, []store.Store{openRedis(t, url, prefix), openRedis(t, url, prefix)},
			storetest.RaceConfig{Keys: 40, PerKey: 8, Workers: 6, TTL: 30 * time.Second})
	})
	t.Run("crashes", func(t *testing.T) {
		t.Parallel()
		prefix := uniquePrefix()
		storetest.Race(t, []store.Store{openRedis(t, url, prefix), openRedis(t, url, prefix)},
			storetest.RaceConfig{Keys: 10, PerKey: 6, Workers: 3, TTL: 300 * time.Millisecond, CrashEvery: 5})
	})
}

func TestRedisSeenIDsExpire(t *testing.T) {
	t.Parallel()
	url := redistest.Start(t)
	prefix := uniquePrefix()
	s := openRedis(t, url, prefix)
	redisstore.SetSeenTTL(s, 200*time.Millisecond)
	ctx := t.Context()
	accept := func(id string) bool {
		t.Helper()
		ok, err := s.Accept(ctx, store.Delivery{ID: id, Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !accept("a") || accept("a") {
		t.Fatal("dedup within the ttl failed")
	}
	o, _ := redis.ParseURL(url)
	c := redis.NewClient(o)
	defer c.Close()
	if ttl, err := c.PTTL(ctx, prefix+"seen:a").Result(); err != nil || ttl <= 0 || ttl > 200*time.Millisecond {
		t.Fatalf("seen key ttl = %v, %v; want (0, 200ms]", ttl, err)
	}
	time.Sleep(400 * time.Millisecond)
	if !accept("a") {
		t.Fatal("expired id refused")
	}
	// The default is SeenTTL.
	s2 := openRedis(t, url, uniquePrefix())
	if _, err := s2.Accept(ctx, store.Delivery{ID: "b", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, "*seen:b").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("seen keys = %v, %v", keys, err)
	}
	if ttl, err := c.PTTL(ctx, keys[0]).Result(); err != nil || ttl < store.SeenTTL-time.Minute || ttl > store.SeenTTL {
		t.Fatalf("seen key ttl = %v, %v; want %v", ttl, err, store.SeenTTL)
	}
}

func TestRedisPrefixesAreIsolated(t *testing.T) {
	t.Parallel()
	url := redistest.Start(t)
	a, b := openRedis(t, url, uniquePrefix()), openRedis(t, url, uniquePrefix())
	ctx := t.Context()
	if _, err := a.Accept(ctx, store.Delivery{ID: "x", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, "r", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Accept(ctx, store.Delivery{ID: "x", Key: "k2"}); err != nil || !ok {
		t.Fatalf("Accept on another prefix = %v, %v", ok, err)
	}
	c, err := b.Claim(ctx, "b", time.Minute)
	if err != nil || c == nil || c.Key != "k2" {
		t.Fatalf("Claim on b = %+v, %v", c, err)
	}
	if _, err := b.Get(ctx, "r"); err != store.ErrNotFound {
		t.Fatalf("Get on b = %v, want ErrNotFound", err)
	}
	if st, err := a.Stats(ctx); err != nil || st != (store.Stats{Queued: 1, Keys: 1}) {
		t.Fatalf("Stats of a = %+v, %v", st, err)
	}
}

// New uses a caller's client and leaves it open.
func TestNewDefaultPrefix(t *testing.T) {
	t.Parallel()
	url := redistest.Start(t)
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(o)
	defer c.Close()
	s := redisstore.New(c, "")
	ctx := t.Context()
	if err := s.Put(ctx, "r", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	v, err := c.HGet(ctx, redisstore.DefaultPrefix+"rec", "r").Result()
	if err != nil || v != "v" {
		t.Fatalf("record under the default prefix = %q, %v", v, err)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := redisstore.Open(ctx, "http://nope"); err == nil {
		t.Error("redisstore.Open(bad url): err = nil")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = redisstore.Open(ctx, "redis://"+addr+"/0")
	if err == nil || !strings.Contains(err.Error(), "store: redis") {
		t.Errorf("redisstore.Open(nothing listening) = %v, want a store error", err)
	}
}

func TestRedisServerGone(t *testing.T) {
	t.Parallel()
	url := redistest.Start(t)
	s := openRedis(t, url, uniquePrefix())
	ctx := t.Context()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Accept(ctx, store.Delivery{ID: "a", Key: "k"}); err == nil {
		t.Error("Accept on a closed client: err = nil")
	}
	if err := s.Ping(ctx); err == nil {
		t.Error("Ping on a closed client: err = nil")
	}
}

func benchRedis(b *testing.B) func(b *testing.B) store.Store {
	url := redistest.Start(b)
	return func(b *testing.B) store.Store { return openRedis(b, url, uniquePrefix()) }
}

func BenchmarkAcceptRedis(b *testing.B)      { storetest.BenchAccept(b, benchRedis(b)) }
func BenchmarkClaimCommitRedis(b *testing.B) { storetest.BenchClaimCommit(b, benchRedis(b)) }
