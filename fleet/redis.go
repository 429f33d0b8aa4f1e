package fleet

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// newClient builds the go-redis client: no retries inside go-redis (the
// fleet has its own breaker and backoff), one dial attempt, short timeouts,
// context deadlines honoured, no identity or maintenance handshake commands.
func newClient(s *settings) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                  s.addr,
		Username:              s.username,
		Password:              s.password,
		DB:                    s.db,
		TLSConfig:             s.tls,
		Protocol:              2,
		DialTimeout:           s.dialTimeout,
		DialerRetries:         1,
		ReadTimeout:           s.commandTimeout,
		WriteTimeout:          s.commandTimeout,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		PoolSize:              4,
		PoolTimeout:           s.commandTimeout,
		DisableIdentity:       true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	})
}

// publishScript records a decision and broadcasts it, atomically.
//
//	KEYS: state, hold, lease
//	ARGV: kind ("open"|"close"|"isolate"|"reset"), hold ms, cause, origin, state TTL ms, channel, dependency
//
// The generation is a hybrid logical clock on the Redis server: the server's
// time in microseconds, or the previous generation + 1 if that is later, so
// it keeps increasing across a Redis restart and never depends on the
// replicas' clocks. An open never shortens the hold key's remaining TTL; an
// isolation holds it for the state TTL (no replica probes while it lasts);
// a close or reset deletes it. The publisher's own probe lease is released.
// While the fleet's last decision is an isolation, an open or a close is
// neither recorded nor broadcast (the publisher's lease is still released),
// and the script returns "0": only a reset (or the state's expiry) ends an
// isolation. Such a decision comes from a replica that had not yet applied
// the isolation (a probe admitted before it that succeeded, a trip racing
// it); that replica applies the isolation when it arrives, or at its next
// resync.
var publishScript = redis.NewScript(`
if (ARGV[1] == 'open' or ARGV[1] == 'close') and redis.call('HGET', KEYS[1], 'kind') == 'isolate' then
  if redis.call('GET', KEYS[3]) == ARGV[4] then redis.call('DEL', KEYS[3]) end
  return '0'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local g = tonumber(redis.call('HGET', KEYS[1], 'gen') or '0')
if now > g then g = now else g = g + 1 end
local gs = string.format('%d', g)
redis.call('HSET', KEYS[1], 'gen', gs, 'kind', ARGV[1], 'cause', ARGV[3], 'origin', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if ARGV[1] == 'open' then
  if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then
    redis.call('SET', KEYS[2], gs, 'PX', ARGV[2])
  end
elseif ARGV[1] == 'isolate' then
  redis.call('SET', KEYS[2], gs, 'PX', ARGV[5])
else
  redis.call('DEL', KEYS[2])
end
if redis.call('GET', KEYS[3]) == ARGV[4] then redis.call('DEL', KEYS[3]) end
redis.call('PUBLISH', ARGV[6], '1|' .. ARGV[1] .. '|' .. gs .. '|' .. ARGV[2] .. '|' .. ARGV[3] .. '|' .. ARGV[4] .. '|' .. ARGV[7])
return gs
`)

// leaseScript takes the fleet's probe lease for a dependency.
//
//	KEYS: state, hold, lease
//	ARGV: the generation the replica knows, owner, lease ms
//
// Returns {code, generation, kind, ms}:
//
//	 1  won (or renewed: the owner already held it)
//	-1  held by another replica; ms is its remaining TTL
//	-2  the replica is behind: a newer decision exists (kind, ms = hold left)
//	-3  the fleet's hold has not ended; ms is what remains of it
//
// An isolation's hold does not refuse a replica that knows of it: such a
// replica is half-open only because its operator reset it on its own
// (WithLocalOperatorActions); the isolated replicas never ask.
var leaseScript = redis.NewScript(`
local g = tonumber(redis.call('HGET', KEYS[1], 'gen') or '0')
local gs = string.format('%d', g)
local k = redis.call('HGET', KEYS[1], 'kind') or ''
local h = redis.call('PTTL', KEYS[2])
if g > tonumber(ARGV[1]) then return {-2, gs, k, h} end
if h > 0 and k ~= 'isolate' then return {-3, gs, k, h} end
local cur = redis.call('GET', KEYS[3])
if cur == false or cur == ARGV[2] then
  redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
  return {1, gs, k, 0}
end
return {-1, gs, k, redis.call('PTTL', KEYS[3])}
`)

// releaseScript deletes the lease if owner holds it.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// message is one decision on the channel:
// "1|kind|generation|hold ms|cause|origin|dependency".
type message struct {
	kind   string
	gen    uint64
	holdMs int64
	cause  string
	origin string
	dep    string
}

func parseMessage(s string) (message, bool) {
	parts := strings.SplitN(s, "|", 7)
	if len(parts) != 7 || parts[0] != "1" || !knownKind(parts[1]) {
		return message{}, false
	}
	gen, err1 := strconv.ParseUint(parts[2], 10, 64)
	hold, err2 := strconv.ParseInt(parts[3], 10, 64)
	if err1 != nil || err2 != nil || hold < 0 || gen == 0 || parts[5] == "" || parts[6] == "" {
		return message{}, false
	}
	return message{kind: parts[1], gen: gen, holdMs: hold, cause: parts[4], origin: parts[5], dep: parts[6]}, true
}

const (
	kindOpen  = "open"
	kindClose = "close"
	// An operator's Isolate and Reset on one replica, for the fleet (unless
	// WithLocalOperatorActions).
	kindIsolate = "isolate"
	kindReset   = "reset"
)

func knownKind(k string) bool {
	return k == kindOpen || k == kindClose || k == kindIsolate || k == kindReset
}

// errClass names an error by kind only. Redis and network error texts may
// carry addresses, user names or (in a misconfigured URL) passwords; logs,
// errors and metrics see only this.
func errClass(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errRedisOpen):
		return "breaker_open"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, redis.ErrClosed), errors.Is(err, context.Canceled):
		return "closed"
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "NOAUTH"), strings.Contains(msg, "WRONGPASS"), strings.Contains(msg, "AUTH"), strings.Contains(msg, "invalid password"):
		return "auth"
	case strings.Contains(msg, "NOPERM"):
		return "permission"
	case strings.Contains(msg, "EOF"), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "disconnected"
	case strings.HasPrefix(msg, "NOSCRIPT"), strings.HasPrefix(msg, "ERR"), strings.HasPrefix(msg, "BUSY"), strings.HasPrefix(msg, "OOM"), strings.HasPrefix(msg, "READONLY"):
		return "server_error"
	}
	return "other"
}

var errRedisOpen = errors.New("fleet: redis unavailable (its breaker is open)")
