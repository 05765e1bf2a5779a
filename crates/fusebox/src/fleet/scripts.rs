//! The Lua scripts the fleet runs in Redis, one round trip each (EVALSHA,
//! loaded again by the client after a Redis restart). Every time they read
//! is Redis's own (`TIME`, `PTTL`): no node's clock is compared with
//! another's.

/// One node's periodic sync for all its shared breakers.
///
/// `KEYS[1]` is the namespace's boot marker, then four keys per breaker:
/// open, control, window, probe lease. `ARGV`: a boot token to set if the
/// marker is missing, the node id, the lease in ms, the node's quorum, then
/// six per breaker: calls, failures and slow calls since the last sync, the
/// window span and bucket in ms (span 0: no fleet window), and a lease
/// operation (0 none, 1 acquire, 2 renew, 3 release).
///
/// Returns the boot marker, then seven per breaker: the fleet window's
/// calls, failures and slow calls, the distinct nodes that reported failures
/// or slow calls in it, the open key's PTTL, the control state (`""`,
/// `force_open` or `disable`) and the lease holder (`""` if none).
pub(crate) const SYNC: &str = r#"
local boot = redis.call('GET', KEYS[1])
if not boot then
  redis.call('SET', KEYS[1], ARGV[1])
  boot = ARGV[1]
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local node = ARGV[2]
local lease = tonumber(ARGV[3])
local out = {boot}
local n = (#KEYS - 1) / 4
for i = 0, n - 1 do
  local open, ctl, win, probe = KEYS[2 + 4 * i], KEYS[3 + 4 * i], KEYS[4 + 4 * i], KEYS[5 + 4 * i]
  local a = 5 + 6 * i
  local dc, df, ds = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local span, bucket, op = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local c, f, s, nodes = 0, 0, 0, 0
  if span > 0 then
    local b = math.floor(now / bucket)
    if dc > 0 then
      redis.call('HINCRBY', win, b .. ':c', dc)
      if df > 0 then redis.call('HINCRBY', win, b .. ':f', df) end
      if ds > 0 then redis.call('HINCRBY', win, b .. ':s', ds) end
      if df + ds > 0 then redis.call('HSET', win, 'n:' .. node, b) end
      redis.call('PEXPIRE', win, span + bucket)
    end
    local oldest = b - math.ceil(span / bucket) + 1
    local h = redis.call('HGETALL', win)
    for j = 1, #h, 2 do
      local field = h[j]
      if string.sub(field, 1, 2) == 'n:' then
        if tonumber(h[j + 1]) < oldest then redis.call('HDEL', win, field) else nodes = nodes + 1 end
      else
        local sep = string.find(field, ':', 1, true)
        local fb = tonumber(string.sub(field, 1, sep - 1))
        if fb < oldest then
          redis.call('HDEL', win, field)
        else
          local v = tonumber(h[j + 1])
          local k = string.sub(field, sep + 1)
          if k == 'c' then c = c + v elseif k == 'f' then f = f + v else s = s + v end
        end
      end
    end
  end
  local holder = redis.call('GET', probe)
  if op == 1 and not holder and redis.call('EXISTS', open) == 0 then
    redis.call('SET', probe, node, 'PX', lease)
    holder = node
  elseif op == 2 and holder == node then
    redis.call('PEXPIRE', probe, lease)
  elseif op == 3 and holder == node then
    redis.call('DEL', probe)
    holder = false
  end
  table.insert(out, c)
  table.insert(out, f)
  table.insert(out, s)
  table.insert(out, nodes)
  table.insert(out, redis.call('PTTL', open))
  table.insert(out, redis.call('GET', ctl) or '')
  table.insert(out, holder or '')
end
return out
"#;

/// A breaker opened on one node: count it toward the quorum and, once q
/// distinct nodes tripped within the window (or q is 1), open the fleet's
/// breaker for the rest of the period and tell every node.
///
/// `KEYS`: open, trips (a sorted set of node -> Redis time), control, probe
/// lease (dropped: a reopened breaker's probe is over).
/// `ARGV`: node, remaining ms, quorum, window ms, channel, message tail.
/// Returns 0 (below quorum, or the fleet is forced open or disabled), 1 (the
/// fleet was already open at least as long) or 2 (opened and published).
pub(crate) const TRIP: &str = r#"
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local q = tonumber(ARGV[3])
if q > 1 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local window = tonumber(ARGV[4])
  redis.call('ZADD', KEYS[2], now, ARGV[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  redis.call('PEXPIRE', KEYS[2], window)
  if redis.call('ZCARD', KEYS[2]) < q then return 0 end
end
local ms = tonumber(ARGV[2])
if redis.call('PTTL', KEYS[1]) >= ms then return 1 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ms)
redis.call('DEL', KEYS[4])
redis.call('PUBLISH', ARGV[5], 'fb1|trip|' .. ARGV[2] .. '|' .. ARGV[6])
return 2
"#;

/// A probe closed the fleet's breaker: forget the open period, the lease,
/// the quorum's trips and the window, and tell every node.
///
/// `KEYS`: open, probe, trips, window. `ARGV`: channel, message.
pub(crate) const CLOSE: &str = r#"
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
"#;

/// Manual control of the fleet's breaker: `force_open` and `disable` are
/// kept under the control key (so a node joining later starts so);
/// `reset` forgets everything. Tells every node.
///
/// `KEYS`: control, open, probe, trips, window. `ARGV`: operation, channel,
/// message.
pub(crate) const CONTROL: &str = r#"
if ARGV[1] == 'reset' then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
else
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('DEL', KEYS[2], KEYS[3])
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
"#;
