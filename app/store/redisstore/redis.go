package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/internal/backend"
)

// DefaultPrefix namespaces every Redis key the store uses.
const DefaultPrefix = "countersign:"

// Store is the store.Store shared by several replicas through one Redis server. Every
// operation that checks a lease and writes is one Lua script, so it is atomic
// with respect to every other replica. Lease expiry and readiness are compared
// with the Redis server's clock (TIME), so clock skew between replicas does not
// matter; Claim.Expires is the caller's own clock at the start of the call plus
// ttl, which is never later than the server-side expiry.
//
// Durability is Redis's: configure appendonly/appendfsync to taste.
//
// Layout (P is the prefix; times are server microseconds):
//
//	P ready          ZSET  ordering key -> when it becomes claimable: keys with
//	                       queued deliveries or outbox effects, scored by the time
//	                       they became ready (InteractiveLead earlier for an
//	                       urgent key), the lease expiry while leased, or the
//	                       end of a Nack delay
//	P urgent         SET   ordering keys with an interactive delivery queued
//	P lease:<key>    HASH  tok, exp, owner (expires by itself shortly after exp)
//	P q:<key>        LIST  encoded deliveries (store/internal/backend), head first
//	P out:<key>      LIST  outbox effects, oldest first
//	P queued         STRING number of queued deliveries
//	P seen:<id>      STRING with a TTL of SeenTTL
//	P dlq            ZSET  delivery id -> sequence;  P dlqdata HASH id -> encoded delivery;  P dlqseq
//	P rec            HASH  record key -> value;  P recidx ZSET (all scores 0) for Scan
//	P elect:<name>   STRING a named lease's owner, expiring with the lease (Lease)
//	P owned:<owner>  SET   keys whose lease owner holds or took, or that owner's
//	                       Nack without a delivery delays (ReleaseOwned)
//	P parked         HASH  key -> the owner whose Nack without a delivery delays it
//	P ownednames:<owner> SET names of the named leases owner took
//
// All keys are reached through the prefix passed as the scripts' only KEYS
// entry; on Redis Cluster use a prefix with a hash tag, e.g. "{countersign}:",
// so that they all live in one slot (not tested).
type Store struct {
	c       redis.UniversalClient
	prefix  string
	owned   bool
	seenTTL time.Duration

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// go-redis writes its own lines to stderr when it cannot dial (several per
// failed command); every such failure also comes back as an error, which
// countersign reports once, so those lines are dropped.
func init() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Option configures Open.
type Option func(*Store)

// WithPrefix sets the prefix of every key (default DefaultPrefix).
func WithPrefix(prefix string) Option {
	return func(r *Store) {
		if prefix != "" {
			r.prefix = prefix
		}
	}
}

// Open connects to the Redis server at url ("redis://[user:pass@]host:port/db",
// or rediss:// for TLS), checks that it answers and returns a store that closes
// the connection in Close.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("store: redis url: %w", err)
	}
	if o.Protocol == 0 {
		// RESP2 unless the URL asks for another (?protocol=3): the store
		// uses no push notifications, and over RESP3 the client looks for
		// them before every command (7% of the CPU of a delivery).
		o.Protocol = 2
	}
	c := redis.NewClient(o)
	r := New(c, DefaultPrefix)
	r.owned = true
	for _, opt := range opts {
		opt(r)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("store: redis ping %s: %w", o.Addr, err)
	}
	return r, nil
}

// New returns a store using client, with every key under prefix (""
// means DefaultPrefix). Close does not close client.
func New(client redis.UniversalClient, prefix string) *Store {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Store{c: client, prefix: prefix, seenTTL: store.SeenTTL}
}

// luaHeader is shared by all scripts. Integers are formatted with %d when
// passed to commands: numbers are 16-digit microsecond timestamps. LEAD is
// InteractiveLead in microseconds.
var luaHeader = "\nlocal LEAD = " + strconv.FormatInt(store.InteractiveLead.Microseconds(), 10) + `
if redis.replicate_commands then redis.replicate_commands() end
local P = KEYS[1]
local READY = P .. 'ready'
local URGENT = P .. 'urgent'
local QUEUED = P .. 'queued'
local REC = P .. 'rec'
local RECIDX = P .. 'recidx'
local DLQ = P .. 'dlq'
local DLQDATA = P .. 'dlqdata'
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local function int(x) return string.format('%d', x) end
local function qk(k) return P .. 'q:' .. k end
local function ok(k) return P .. 'out:' .. k end
local function lk(k) return P .. 'lease:' .. k end
local function has_work(k)
  return redis.call('LLEN', qk(k)) > 0 or redis.call('LLEN', ok(k)) > 0
end
-- expiry of k's lease if it is live, else nil
local function lease_exp(k)
  local v = redis.call('HMGET', lk(k), 'tok', 'exp')
  local e = tonumber(v[2] or '0') or 0
  if v[1] and e > now then return e end
  return nil
end
local function holds(k, tok)
  local v = redis.call('HMGET', lk(k), 'tok', 'exp')
  return tok ~= '' and v[1] == tok and (tonumber(v[2] or '0') or 0) > now
end
local PARKED = P .. 'parked'
local function owned(o) return P .. 'owned:' .. o end
-- forget k's lease (and that its holder owns it)
local function drop_lease(k)
  local o = redis.call('HGET', lk(k), 'owner')
  if o then redis.call('SREM', owned(o), k) end
  redis.call('DEL', lk(k))
end
-- forget that k waits for its parker (a Nack without a delivery)
local function unpark(k)
  local o = redis.call('HGET', PARKED, k)
  if o then
    redis.call('HDEL', PARKED, k)
    redis.call('SREM', owned(o), k)
  end
end
local function set_lease(k, tok, owner, exp)
  redis.call('HSET', lk(k), 'tok', tok, 'exp', int(exp), 'owner', owner)
  redis.call('PEXPIREAT', lk(k), int(math.floor(exp / 1000) + 1000))
  redis.call('SADD', owned(owner), k)
end
-- when k, neither leased nor delayed, is claimable: now, or LEAD earlier
-- while it is urgent (an interactive delivery is queued); a key whose queue
-- is empty is urgent no more
local function ready_at(k)
  if redis.call('LLEN', qk(k)) == 0 then
    redis.call('SREM', URGENT, k)
  elseif redis.call('SISMEMBER', URGENT, k) == 1 then
    return now - LEAD
  end
  return now
end
-- keep READY in step with k: a member iff k has work; a new member is
-- claimable when its live lease expires, else now (ready_at).
local function sync(k)
  if has_work(k) then
    if not redis.call('ZSCORE', READY, k) then
      redis.call('ZADD', READY, int(lease_exp(k) or ready_at(k)), k)
    elseif redis.call('LLEN', qk(k)) == 0 then
      redis.call('SREM', URGENT, k)
    end
  else
    redis.call('ZREM', READY, k)
    redis.call('SREM', URGENT, k)
  end
end
-- release k's lease; it becomes claimable at 'at' (nil: ready_at) if it
-- has work
local function release(k, at)
  drop_lease(k)
  if has_work(k) then
    redis.call('ZADD', READY, int(at or ready_at(k)), k)
  else
    redis.call('ZREM', READY, k)
    redis.call('SREM', URGENT, k)
  end
end
-- queue js under k unless id was seen; urgent ('1'): the delivery is
-- interactive, and k, if claimable now, moves LEAD ahead
local function enqueue(k, id, js, seen_ms, urgent)
  if not redis.call('SET', P .. 'seen:' .. id, '1', 'NX', 'PX', seen_ms) then return 0 end
  redis.call('RPUSH', qk(k), js)
  redis.call('INCR', QUEUED)
  if urgent == '1' then
    redis.call('SADD', URGENT, k)
    local at = tonumber(redis.call('ZSCORE', READY, k) or '')
    if at and at <= now and at > now - LEAD and not lease_exp(k) then
      redis.call('ZADD', READY, int(now - LEAD), k)
    end
  end
  sync(k)
  return 1
end
`

func script(body string) *redis.Script { return redis.NewScript(luaHeader + body) }

var (
	// ARGV: seen_ms, key, id, encoded delivery, urgent ('1' or '0'). Returns
	// 1 if queued, 0 if a duplicate.
	luaAccept = script(`return enqueue(ARGV[2], ARGV[3], ARGV[4], ARGV[1], ARGV[5])`)

	// ARGV: token, owner, ttl_us. Returns {key, encoded head or nil, outbox
	// length} or nil.
	luaClaim = script(`
local ttl = tonumber(ARGV[3])
for i = 1, 1000 do
  local r = redis.call('ZRANGEBYSCORE', READY, '-inf', int(now), 'LIMIT', 0, 1)
  if #r == 0 then return false end
  local k = r[1]
  if not has_work(k) then
    redis.call('ZREM', READY, k)
  else
    local e = lease_exp(k)
    if e then
      redis.call('ZADD', READY, int(e), k)
    else
      local exp = now + ttl
      drop_lease(k)
      unpark(k)
      set_lease(k, ARGV[1], ARGV[2], exp)
      redis.call('ZADD', READY, int(exp), k)
      return {k, redis.call('LINDEX', qk(k), 0), redis.call('LLEN', ok(k))}
    end
  end
end
return false`)

	// ARGV: key, token, ttl_us. Returns 1, or 0 if the lease is lost.
	luaRenew = script(`
local k = ARGV[1]
if not holds(k, ARGV[2]) then return 0 end
local exp = now + tonumber(ARGV[3])
set_lease(k, ARGV[2], redis.call('HGET', lk(k), 'owner') or '', exp)
if redis.call('ZSCORE', READY, k) then redis.call('ZADD', READY, int(exp), k) end
return 1`)

	// ARGV: seen_ms, key, token, head prefix ('' if no delivery), head prefix
	//   of the same delivery stored as JSON by an earlier version,
	//   '1' to pop the oldest outbox effect first / '0',
	//   n, n × (record key, '1' to delete / '0', value),
	//   n, n × effect,
	//   n, n × (key, id, encoded delivery, urgent).
	// Returns 0, 1 if the lease is lost, 2 if the delivery is not at the head.
	luaCommit = script(`
local k, tok, hp, lhp = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if not holds(k, tok) then return 1 end
if hp ~= '' then
  local h = redis.call('LINDEX', qk(k), 0)
  if not h or (string.sub(h, 1, #hp) ~= hp and string.sub(h, 1, #lhp) ~= lhp) then return 2 end
end
if ARGV[6] == '1' then redis.call('LPOP', ok(k)) end
local i = 7
local n = tonumber(ARGV[i]); i = i + 1
for j = 1, n do
  local rk = ARGV[i]
  if ARGV[i + 1] == '1' then
    redis.call('HDEL', REC, rk)
    redis.call('ZREM', RECIDX, rk)
  else
    redis.call('HSET', REC, rk, ARGV[i + 2])
    redis.call('ZADD', RECIDX, 0, rk)
  end
  i = i + 3
end
n = tonumber(ARGV[i]); i = i + 1
for j = 1, n do
  redis.call('RPUSH', ok(k), ARGV[i])
  i = i + 1
end
if hp ~= '' then
  redis.call('LPOP', qk(k))
  redis.call('DECR', QUEUED)
end
n = tonumber(ARGV[i]); i = i + 1
for j = 1, n do
  enqueue(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[1], ARGV[i + 3])
  i = i + 4
end
sync(k)
return 0`)

	// ARGV: key, token. Returns the outbox, or nil if the lease is lost.
	luaOutbox = script(`
if not holds(ARGV[1], ARGV[2]) then return false end
return redis.call('LRANGE', ok(ARGV[1]), 0, -1)`)

	// ARGV: key, token. Returns 1, or 0 if the lease is lost.
	luaPopEffect = script(`
local k = ARGV[1]
if not holds(k, ARGV[2]) then return 0 end
redis.call('LPOP', ok(k))
sync(k)
return 1`)

	// ARGV: key, token. Returns 1, or 0 if the lease is lost.
	luaRelease = script(`
if not holds(ARGV[1], ARGV[2]) then return 0 end
release(ARGV[1], nil)
return 1`)

	// ARGV: key, token, mode, the current encoded head, its new encoding, delay_us.
	// mode is '0' if the claim has no delivery, '1' if it is the head read by
	// the caller, '2' if it is not the head. Returns 0, 1 if lost, 2 if not at
	// the head.
	luaNack = script(`
local k = ARGV[1]
if not holds(k, ARGV[2]) then return 1 end
if ARGV[3] == '2' then return 2 end
if ARGV[3] == '1' then
  if redis.call('LINDEX', qk(k), 0) ~= ARGV[4] then return 2 end
  redis.call('LSET', qk(k), 0, ARGV[5])
end
local o = redis.call('HGET', lk(k), 'owner')
release(k, now + tonumber(ARGV[6]))
if ARGV[3] == '0' and o and o ~= '' and has_work(k) then
  -- a wait, not a failed attempt: ReleaseOwned(o) may end it
  redis.call('HSET', PARKED, k, o)
  redis.call('SADD', owned(o), k)
end
return 0`)

	// ARGV: key, token, mode (as for luaNack), the current encoded head, the dead
	// letter encoded, delivery id. Returns 0, 1 if lost, 2 if not at the head.
	luaDeadLetter = script(`
local k = ARGV[1]
if not holds(k, ARGV[2]) then return 1 end
if ARGV[3] == '2' then return 2 end
if ARGV[3] == '1' then
  if redis.call('LINDEX', qk(k), 0) ~= ARGV[4] then return 2 end
  redis.call('LPOP', qk(k))
  redis.call('DECR', QUEUED)
  local seq = redis.call('INCR', P .. 'dlqseq')
  redis.call('ZADD', DLQ, seq, ARGV[6])
  redis.call('HSET', DLQDATA, ARGV[6], ARGV[5])
end
release(k, nil)
return 0`)

	luaDeadLetters = script(`
local out = {}
for _, id in ipairs(redis.call('ZRANGE', DLQ, 0, -1)) do
  local v = redis.call('HGET', DLQDATA, id)
  if v then out[#out + 1] = v end
end
return out`)

	// ARGV: id, current encoding, new encoding, key. Returns 0, 2 if the dead letter
	// changed meanwhile, 3 if it is gone.
	luaRetryDeadLetter = script(`
local cur = redis.call('HGET', DLQDATA, ARGV[1])
if not cur then return 3 end
if cur ~= ARGV[2] then return 2 end
redis.call('ZREM', DLQ, ARGV[1])
redis.call('HDEL', DLQDATA, ARGV[1])
redis.call('RPUSH', qk(ARGV[4]), ARGV[3])
redis.call('INCR', QUEUED)
sync(ARGV[4])
return 0`)

	// ARGV: key, value.
	luaPut = script(`
redis.call('HSET', REC, ARGV[1], ARGV[2])
redis.call('ZADD', RECIDX, 0, ARGV[1])
return 1`)

	// ARGV: key, value, key, value...
	luaPutAll = script(`
for i = 1, #ARGV, 2 do
  redis.call('HSET', REC, ARGV[i], ARGV[i+1])
  redis.call('ZADD', RECIDX, 0, ARGV[i])
end
return 1`)

	// ARGV: key, window_ms. Returns the counter's new value.
	luaCount = script(`
local k = P .. 'cnt:' .. ARGV[1]
local n = redis.call('INCR', k)
if n == 1 then redis.call('PEXPIRE', k, ARGV[2]) end
return n`)

	// Returns {queued, keys, dead letters, outbox effects, delayed keys, the
	// soonest delayed key's wake (server µs; 0: none)}. The effects are
	// counted from the outboxes themselves (every key with work is in READY),
	// so no counter kept by an earlier version can be wrong.
	luaStats = script(`
local effects, delayed, soonest = 0, 0, 0
local r = redis.call('ZRANGE', READY, 0, -1, 'WITHSCORES')
for i = 1, #r, 2 do
  local k, at = r[i], tonumber(r[i + 1])
  effects = effects + redis.call('LLEN', ok(k))
  if at > now and not lease_exp(k) then
    delayed = delayed + 1
    if soonest == 0 or at < soonest then soonest = at end
  end
end
return {tonumber(redis.call('GET', QUEUED) or '0') or 0, #r / 2, redis.call('ZCARD', DLQ), effects, delayed, soonest}`)

	// ARGV: keys to wake, in order. Each becomes claimable now (the i-th one
	// i-1 µs later, to keep the order among them).
	luaWake = script(`
for i, k in ipairs(ARGV) do
  local at = redis.call('ZSCORE', READY, k)
  if at and tonumber(at) > now and has_work(k) and not lease_exp(k) then
    redis.call('ZADD', READY, int(now + i - 1), k)
  end
end
return 1`)

	// ARGV: owner. Returns how many key leases and waits it ended.
	luaReleaseOwned = script(`
local o = ARGV[1]
local n, i = 0, 0
for _, k in ipairs(redis.call('SMEMBERS', owned(o))) do
  if redis.call('HGET', lk(k), 'owner') == o then
    release(k, now)
    n = n + 1
  elseif redis.call('HGET', PARKED, k) == o then
    redis.call('HDEL', PARKED, k)
    local at = redis.call('ZSCORE', READY, k)
    if at and tonumber(at) > now and has_work(k) and not lease_exp(k) then
      redis.call('ZADD', READY, int(now + i), k)
      i = i + 1
      n = n + 1
    end
  end
end
redis.call('DEL', owned(o))
for _, name in ipairs(redis.call('SMEMBERS', P .. 'ownednames:' .. o)) do
  if redis.call('GET', P .. 'elect:' .. name) == o then redis.call('DEL', P .. 'elect:' .. name) end
end
redis.call('DEL', P .. 'ownednames:' .. o)
return n`)
)

func (r *Store) run(ctx context.Context, s *redis.Script, args ...any) *redis.Cmd {
	return s.Run(ctx, r.c, []string{r.prefix}, args...)
}

func wrapRedis(op string, err error) error {
	if err == nil {
		return nil
	}
	if unreachable(err) {
		return store.NewUnavailableError("store: redis "+op, err)
	}
	return fmt.Errorf("store: redis %s: %w", op, err)
}

// unreachable reports whether err says the backend could not be reached.
func unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// leaseResult maps a script status to an error: 0 ok, 1 lease lost, 2 not head.
func leaseResult(op string, c *store.Claim, code int64, err error) error {
	if err != nil {
		return wrapRedis(fmt.Sprintf("%s %q", op, c.Key), err)
	}
	switch code {
	case 0:
		return nil
	case 1:
		return wrapRedis(fmt.Sprintf("%s %q", op, c.Key), store.ErrLeaseLost)
	case 2:
		return wrapRedis(fmt.Sprintf("%s %q", op, c.Key), backend.ErrNotHead(c))
	}
	return fmt.Errorf("store: redis %s %q: unexpected script result %d", op, c.Key, code)
}

func durUS(d time.Duration) int64 { return max(d.Microseconds(), 1) }

func (r *Store) seenMS() int64 { return max(r.seenTTL.Milliseconds(), 1) }

// Accept implements Store.
func (r *Store) Accept(ctx context.Context, d store.Delivery) (bool, error) {
	if err := backend.CheckDelivery(&d); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	raw, err := backend.EncodeDelivery(d, time.Now())
	if err != nil {
		return false, err
	}
	n, err := r.run(ctx, luaAccept, r.seenMS(), d.Key, d.ID, raw, urgentArg(d)).Int64()
	if err != nil {
		return false, wrapRedis(fmt.Sprintf("accept %q", d.ID), err)
	}
	return n == 1, nil
}

// urgentArg is d.Interactive as the scripts read it.
func urgentArg(d store.Delivery) string {
	if d.Interactive {
		return "1"
	}
	return "0"
}

// Claim implements Store.
func (r *Store) Claim(ctx context.Context, owner string, ttl time.Duration) (*store.Claim, error) {
	ttl, err := backend.CheckTTL(ttl)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tok, err := backend.NewToken()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := r.run(ctx, luaClaim, tok, owner, durUS(ttl)).Slice()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapRedis("claim", err)
	}
	if len(res) != 3 {
		return nil, fmt.Errorf("store: redis claim: unexpected reply %v", res)
	}
	key, _ := res[0].(string)
	effects, _ := res[2].(int64)
	c := &store.Claim{Key: key, Token: tok, Expires: start.Add(ttl), NoEffects: effects == 0}
	if head, ok := res[1].(string); ok {
		if c.Delivery, err = backend.DecodeDelivery([]byte(head)); err != nil {
			return nil, fmt.Errorf("store: redis claim %q: %w", key, err)
		}
	}
	return c, nil
}

// Renew implements Store.
func (r *Store) Renew(ctx context.Context, c *store.Claim, ttl time.Duration) error {
	if err := backend.CheckClaim(c); err != nil {
		return err
	}
	ttl, err := backend.CheckTTL(ttl)
	if err != nil {
		return err
	}
	n, err := r.run(ctx, luaRenew, c.Key, c.Token, durUS(ttl)).Int64()
	if err == nil && n == 0 {
		err = store.ErrLeaseLost
	}
	return wrapRedis(fmt.Sprintf("renew %q", c.Key), err)
}

// Commit implements Store.
func (r *Store) Commit(ctx context.Context, c *store.Claim, w store.Commit) error {
	if err := backend.CheckClaim(c); err != nil {
		return err
	}
	enc, err := backend.CheckCommit(&w, time.Now())
	if err != nil {
		return err
	}
	args := make([]any, 0, 9+3*len(w.Records)+len(w.Effects)+4*len(w.Enqueue))
	hp, lhp := "", ""
	if c.Delivery != nil {
		hp, lhp = string(backend.HeadPrefix(c.Delivery.ID)), string(backend.LegacyHeadPrefix(c.Delivery.ID))
	}
	pop := "0"
	if w.PopEffect {
		pop = "1"
	}
	args = append(args, r.seenMS(), c.Key, c.Token, hp, lhp, pop, len(w.Records))
	for k, v := range w.Records {
		if v == nil {
			args = append(args, k, "1", "")
		} else {
			args = append(args, k, "0", v)
		}
	}
	args = append(args, len(w.Effects))
	for _, e := range w.Effects {
		args = append(args, e)
	}
	args = append(args, len(w.Enqueue))
	for i, d := range w.Enqueue {
		args = append(args, d.Key, d.ID, enc[i], urgentArg(d))
	}
	code, err := r.run(ctx, luaCommit, args...).Int64()
	return leaseResult("commit", c, code, err)
}

// Outbox implements Store.
func (r *Store) Outbox(ctx context.Context, c *store.Claim) ([][]byte, error) {
	if err := backend.CheckClaim(c); err != nil {
		return nil, err
	}
	res, err := r.run(ctx, luaOutbox, c.Key, c.Token).StringSlice()
	if errors.Is(err, redis.Nil) {
		err = store.ErrLeaseLost
	}
	if err != nil {
		return nil, wrapRedis(fmt.Sprintf("outbox %q", c.Key), err)
	}
	out := make([][]byte, len(res))
	for i, s := range res {
		out[i] = []byte(s)
	}
	return out, nil
}

// PopEffect implements Store.
func (r *Store) PopEffect(ctx context.Context, c *store.Claim) error {
	if err := backend.CheckClaim(c); err != nil {
		return err
	}
	n, err := r.run(ctx, luaPopEffect, c.Key, c.Token).Int64()
	if err == nil && n == 0 {
		err = store.ErrLeaseLost
	}
	return wrapRedis(fmt.Sprintf("pop effect %q", c.Key), err)
}

// Release implements Store.
func (r *Store) Release(ctx context.Context, c *store.Claim) error {
	if err := backend.CheckClaim(c); err != nil {
		return err
	}
	n, err := r.run(ctx, luaRelease, c.Key, c.Token).Int64()
	if err == nil && n == 0 {
		err = store.ErrLeaseLost
	}
	return wrapRedis(fmt.Sprintf("release %q", c.Key), err)
}

// head reads the raw head of c's queue and checks it is c.Delivery. Only the
// lease holder changes the head, so it stays so until the holder's next script
// (which checks it again).
func (r *Store) head(ctx context.Context, op string, c *store.Claim) (*store.Delivery, string, error) {
	raw, err := r.c.LIndex(ctx, r.prefix+"q:"+c.Key, 0).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, "", wrapRedis(fmt.Sprintf("%s %q", op, c.Key), err)
	}
	if !backend.IsHead([]byte(raw), c.Delivery.ID) {
		return nil, raw, nil // the script reports a lost lease, or errNotHead
	}
	d, err := backend.DecodeDelivery([]byte(raw))
	if err != nil {
		return nil, "", err
	}
	return d, raw, nil
}

// Nack implements Store.
func (r *Store) Nack(ctx context.Context, c *store.Claim, errMsg string, retryAfter time.Duration) error {
	if err := backend.CheckClaim(c); err != nil {
		return err
	}
	has, old, nw := "0", "", []byte(nil)
	if c.Delivery != nil {
		d, raw, err := r.head(ctx, "nack", c)
		if err != nil {
			return err
		}
		has, old = "2", raw
		if d != nil {
			has = "1"
			d.Attempts++
			d.LastError = errMsg
			if nw, err = backend.EncodeDelivery(*d, time.Now()); err != nil {
				return err
			}
		}
	}
	code, err := r.run(ctx, luaNack, c.Key, c.Token, has, old, nw, backend.ClampDelay(retryAfter).Microseconds()).Int64()
	return leaseResult("nack", c, code, err)
}

// DeadLetter implements Store.
func (r *Store) DeadLetter(ctx context.Context, c *store.Claim, errMsg string) error {
	if err := backend.CheckClaim(c); err != nil {
		return err
	}
	has, old, nw, id := "0", "", []byte(nil), ""
	if c.Delivery != nil {
		d, raw, err := r.head(ctx, "dead letter", c)
		if err != nil {
			return err
		}
		has, old, id = "2", raw, c.Delivery.ID
		if d != nil {
			has = "1"
			d.Attempts++
			d.LastError = errMsg
			if nw, err = backend.EncodeDelivery(*d, time.Now()); err != nil {
				return err
			}
		}
	}
	code, err := r.run(ctx, luaDeadLetter, c.Key, c.Token, has, old, nw, id).Int64()
	return leaseResult("dead letter", c, code, err)
}

// DeadLetters implements Store.
func (r *Store) DeadLetters(ctx context.Context) ([]store.Delivery, error) {
	res, err := r.run(ctx, luaDeadLetters).StringSlice()
	if err != nil {
		return nil, wrapRedis("dead letters", err)
	}
	out := make([]store.Delivery, 0, len(res))
	for _, s := range res {
		d, err := backend.DecodeDelivery([]byte(s))
		if err != nil {
			return nil, err
		}
		out = append(out, *d)
	}
	return out, nil
}

// RetryDeadLetter implements Store.
func (r *Store) RetryDeadLetter(ctx context.Context, id string) error {
	if id == "" {
		return store.ErrNotFound
	}
	for range 10 {
		raw, err := r.c.HGet(ctx, r.prefix+"dlqdata", id).Result()
		if errors.Is(err, redis.Nil) {
			return store.ErrNotFound
		}
		if err != nil {
			return wrapRedis(fmt.Sprintf("retry dead letter %q", id), err)
		}
		d, err := backend.DecodeDelivery([]byte(raw))
		if err != nil {
			return err
		}
		if err := backend.CheckDelivery(d); err != nil {
			return fmt.Errorf("store: redis retry dead letter %q: %w", id, err)
		}
		d.Attempts = 0
		nw, err := backend.EncodeDelivery(*d, time.Now())
		if err != nil {
			return err
		}
		code, err := r.run(ctx, luaRetryDeadLetter, id, raw, nw, d.Key).Int64()
		if err != nil {
			return wrapRedis(fmt.Sprintf("retry dead letter %q", id), err)
		}
		switch code {
		case 0:
			return nil
		case 3:
			return store.ErrNotFound
		}
		// 2: replaced meanwhile, read it again
	}
	return fmt.Errorf("store: redis retry dead letter %q: too much contention", id)
}

// Get implements Store.
func (r *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if backend.CheckRecordKey(key) != nil {
		return nil, store.ErrNotFound
	}
	v, err := r.c.HGet(ctx, r.prefix+"rec", key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, wrapRedis(fmt.Sprintf("get %q", key), err)
	}
	return v, nil
}

// Put implements Store. A nil val writes an empty record.
func (r *Store) Put(ctx context.Context, key string, val []byte) error {
	if err := backend.CheckRecordKey(key); err != nil {
		return err
	}
	if val == nil {
		val = []byte{}
	}
	return wrapRedis(fmt.Sprintf("put %q", key), r.run(ctx, luaPut, key, val).Err())
}

// PutAll implements Store: one script, atomic.
func (r *Store) PutAll(ctx context.Context, recs map[string][]byte) error {
	args := make([]any, 0, 2*len(recs))
	for k, v := range recs {
		if err := backend.CheckRecordKey(k); err != nil {
			return err
		}
		if v == nil {
			v = []byte{}
		}
		args = append(args, k, v)
	}
	if len(args) == 0 {
		return nil
	}
	return wrapRedis(fmt.Sprintf("put %d records", len(recs)), r.run(ctx, luaPutAll, args...).Err())
}

// Count implements Store.
func (r *Store) Count(ctx context.Context, key string, window time.Duration) (int64, error) {
	if err := backend.CheckRecordKey(key); err != nil {
		return 0, err
	}
	if window <= 0 {
		return 0, backend.Invalidf("counter window %v: must be positive", window)
	}
	n, err := r.run(ctx, luaCount, key, max(window.Milliseconds(), 1)).Int64()
	if err != nil {
		return 0, wrapRedis(fmt.Sprintf("count %q", key), err)
	}
	return n, nil
}

// Scan implements Store.
func (r *Store) Scan(ctx context.Context, prefix string) ([]string, error) {
	lo, hi := "-", "+"
	if prefix != "" {
		lo = "[" + prefix
		if succ, ok := successor(prefix); ok {
			hi = "(" + succ
		}
	}
	keys, err := r.c.ZRangeByLex(ctx, r.prefix+"recidx", &redis.ZRangeBy{Min: lo, Max: hi}).Result()
	if err != nil {
		return nil, wrapRedis("scan", err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return keys, nil
}

// successor is the smallest string greater than every string with prefix p;
// ok is false if there is none (p is all 0xff bytes).
func successor(p string) (string, bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// Stats implements Store.
func (r *Store) Stats(ctx context.Context) (store.Stats, error) {
	res, err := r.run(ctx, luaStats).Int64Slice()
	if err != nil {
		return store.Stats{}, wrapRedis("stats", err)
	}
	if len(res) != 6 {
		return store.Stats{}, fmt.Errorf("store: redis stats: unexpected reply %v", res)
	}
	st := store.Stats{Queued: int(max(res[0], 0)), Keys: int(res[1]), DeadLetters: int(res[2]), Effects: int(res[3]), Delayed: int(res[4])}
	if res[5] > 0 {
		st.NextWake = time.UnixMicro(res[5])
	}
	return st, nil
}

// Wake implements Store.
func (r *Store) Wake(ctx context.Context, keys ...string) error {
	args := make([]any, 0, len(keys))
	for _, k := range keys {
		if backend.CheckName("key", k) == nil {
			args = append(args, k)
		}
	}
	if len(args) == 0 {
		return ctx.Err()
	}
	return wrapRedis("wake", r.run(ctx, luaWake, args...).Err())
}

// ReleaseOwned implements Store.
func (r *Store) ReleaseOwned(ctx context.Context, owner string) (int, error) {
	if err := backend.CheckName("lease owner", owner); err != nil {
		return 0, err
	}
	n, err := r.run(ctx, luaReleaseOwned, owner).Int64()
	if err != nil {
		return 0, wrapRedis(fmt.Sprintf("release owned by %q", owner), err)
	}
	return int(n), nil
}

// Ping implements Store: it writes a short-lived key.
func (r *Store) Ping(ctx context.Context) error {
	err := r.c.Set(ctx, r.prefix+"ping", strconv.FormatInt(time.Now().UnixNano(), 10), time.Minute).Err()
	return wrapRedis("ping", err)
}

// Close implements Store. It closes the client only if Open created it.
func (r *Store) Close() error {
	r.closeOnce.Do(func() {
		if r.owned {
			if err := r.c.Close(); err != nil {
				r.closeErr = fmt.Errorf("store: redis close: %w", err)
			}
		}
	})
	return r.closeErr
}

// Seen implements Store.
func (r *Store) Seen(ctx context.Context, id string) (bool, error) {
	if backend.CheckName("delivery id", id) != nil {
		return false, nil
	}
	n, err := r.c.Exists(ctx, r.prefix+"seen:"+id).Result()
	if err != nil {
		return false, wrapRedis(fmt.Sprintf("seen %q", id), err)
	}
	return n == 1, nil
}

// luaLease takes or extends a named lease. ARGV: name, owner, ttl_ms.
var luaLease = script(`
local k = P .. 'elect:' .. ARGV[1]
local cur = redis.call('GET', k)
if cur and cur ~= ARGV[2] then return 0 end
redis.call('SET', k, ARGV[2], 'PX', tonumber(ARGV[3]))
if not cur then redis.call('SADD', P .. 'ownednames:' .. ARGV[2], ARGV[1]) end
return 1
`)

// Lease implements Store.
func (r *Store) Lease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if err := backend.CheckName("lease name", name); err != nil {
		return false, err
	}
	if err := backend.CheckName("lease owner", owner); err != nil {
		return false, err
	}
	if ttl <= 0 || ttl > backend.MaxDuration {
		return false, backend.Invalidf("lease ttl %v out of range", ttl)
	}
	n, err := r.run(ctx, luaLease, name, owner, max(ttl.Milliseconds(), 1)).Int64()
	if err != nil {
		return false, wrapRedis(fmt.Sprintf("lease %q", name), err)
	}
	return n == 1, nil
}
