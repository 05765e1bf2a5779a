//! The Lua scripts the fleet runs in Redis, one round trip each (EVALSHA,
//! loaded again by the client after a Redis restart). Every time they read
//! is Redis's own (`TIME`, `PTTL`): no node's clock is compared with
//! another's.

/// One node's periodic sync for all its shared breakers.
///
/// `KEYS[1]` is the namespace's boot marker, then five keys per breaker:
/// open, control, window, probe lease, tripped. `ARGV`: a boot token to set if the
/// marker is missing, the node id, the lease in ms, the node's quorum, how
/// early in ms the lease may be taken before the open period ends (the
/// protocol's `lease_ahead`: `sync_every` plus the recent round trip), then six per breaker: calls, failures and slow
/// calls since the last sync, the window span and bucket in ms (span 0: no
/// fleet window), and a lease operation (0 none, 1 acquire: granted if
/// nobody holds the lease and the open period is over or ends within that
/// time, 2 renew, 3 release).
///
/// Returns the boot marker, then eight per breaker: the fleet window's
/// calls, failures and slow calls, the distinct nodes that reported failures
/// or slow calls in it, the open key's PTTL (0 if the open period is over
/// but the fleet's breaker has not closed since: half-open; negative if
/// closed), the control state (`""`, `force_open` or `disable`), the lease
/// holder (`""` if none) and the trip's epoch (`""` if closed).
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
local ahead = tonumber(ARGV[5])
local out = {boot}
local n = (#KEYS - 1) / 5
for i = 0, n - 1 do
  local open, ctl, win, probe = KEYS[2 + 5 * i], KEYS[3 + 5 * i], KEYS[4 + 5 * i], KEYS[5 + 5 * i]
  local tripped = KEYS[6 + 5 * i]
  local a = 6 + 6 * i
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
  if op == 1 and not holder and redis.call('PTTL', open) <= ahead then
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
  local epoch = redis.call('GET', tripped)
  local pttl = redis.call('PTTL', open)
  if pttl < 0 and epoch then pttl = 0 end
  table.insert(out, pttl)
  table.insert(out, redis.call('GET', ctl) or '')
  table.insert(out, holder or '')
  table.insert(out, epoch or '')
end
return out
"#;

/// A breaker opened on one node: count it toward the quorum and, once q
/// distinct nodes tripped within the window (or q is 1), open the fleet's
/// breaker for the rest of the period and tell every node. A trip of a
/// fleet that was not open starts a new epoch (kept under `tripped` until
/// the fleet's breaker closes): Redis's time in microseconds, above the
/// previous epoch. Only compared for equality, by [`CLOSE`].
///
/// `KEYS`: open, trips (a sorted set of node -> Redis time), control, probe
/// lease (dropped: a reopened breaker's probe is over), tripped.
/// `ARGV`: node, remaining ms, quorum, window ms, channel, the trip message
/// to publish (the node's, signed if the fleet has a key), and
/// the trip epoch a failed probe ran under (`""` if not a probe's trip): if
/// it is the fleet's current epoch, the probe was the fleet's and the quorum
/// does not apply.
/// Returns 0 (below quorum, or the fleet is forced open or disabled), 1 (the
/// fleet was already open at least as long) or 2 (opened and published).
pub(crate) const TRIP: &str = r#"
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local q = tonumber(ARGV[3])
if q > 1 and ARGV[7] ~= '' and redis.call('GET', KEYS[5]) == ARGV[7] then q = 1 end
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
local pttl = redis.call('PTTL', KEYS[1])
if pttl >= ms then return 1 end
if pttl < 0 then
  local t = redis.call('TIME')
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local last = tonumber(redis.call('GET', KEYS[5]) or '0') or 0
  redis.call('SET', KEYS[5], string.format('%.0f', math.max(us, last + 1)))
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ms)
redis.call('DEL', KEYS[4])
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 2
"#;

/// A probe closed the fleet's breaker: forget the open period, the lease,
/// the quorum's trips, the window and the epoch, and tell every node.
/// Compare-and-set on the epoch: while the fleet's breaker is tripped, a
/// close counts only for the trip its probe was admitted under (`ARGV[3]`,
/// `""` if the node never learnt one), and never while the fleet's breaker
/// is open or under a control state (forced open, disabled). A close that
/// comes late (the node was cut off from Redis while the fleet tripped
/// again) or that probed for no fleet-wide trip while there is one changes
/// nothing and returns 0; the node then takes the fleet's state at its next
/// sync.
///
/// `KEYS`: open, probe, trips, window, tripped, control. `ARGV`: channel,
/// message, epoch.
pub(crate) const CLOSE: &str = r#"
if redis.call('EXISTS', KEYS[6]) == 1 or redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local epoch = redis.call('GET', KEYS[5])
if epoch and epoch ~= ARGV[3] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
"#;

/// Manual control of the fleet's breaker: `force_open` and `disable` are
/// kept under the control key (so a node joining later starts so);
/// `reset` forgets everything. Tells every node.
///
/// `KEYS`: control, open, probe, trips, window, tripped. `ARGV`: operation,
/// channel, message.
pub(crate) const CONTROL: &str = r#"
if ARGV[1] == 'reset' then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
else
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('DEL', KEYS[2], KEYS[3], KEYS[6])
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
"#;
