"""Every server-side script crawlog runs, in one place.

Each step that must never be left half done is one script: Redis runs a script atomically,
so a client killed mid-call either ran the whole step or none of it. The scripts use only
commands common to Redis 7.0 and Valkey 8, and touch only keys passed in ``KEYS`` (all of
one job's hash tag, so one cluster slot).

Idempotency: every event carries an ``event_id`` minted by its producer before the first
attempt. redis-py retries a command whose reply was lost, so a script may run twice with
the same arguments; ``append`` skips an id already in the current or previous dedup
generation set.
"""

from __future__ import annotations

# Shared by the scripts below. KEYS of the dedup generation sets are always passed in.
_PRELUDE = """
local function seen(cur, prev, eid)
  return redis.call('SISMEMBER', cur, eid) == 1 or redis.call('SISMEMBER', prev, eid) == 1
end

-- XADD one event unless its id was appended within the dedup window; false if skipped.
local function append(events, cur, prev, eid, payload)
  if redis.call('SISMEMBER', prev, eid) == 1 or redis.call('SADD', cur, eid) == 0 then
    return false
  end
  return redis.call('XADD', events, '*', 'e', payload)
end

-- Mark a fingerprint seen in its bucket (a hash: its field -> ''), unless it is already
-- there, or in the set an older crawlog kept (``legacy``: KEYS[1] exists); true if new.
-- Counted in the seen count (KEYS[8] of ENQUEUE) by the caller.
local function mark_seen(legacy, bucket, field, fp)
  if legacy and redis.call('SISMEMBER', KEYS[1], fp) == 1 then return false end
  return redis.call('HSETNX', bucket, field, '') == 1
end

-- Free the politeness slots a holder's index (hash token -> host) lists on the hosts of
-- ``slots`` (host -> that host's slots key), with their index entries. A slot on a host
-- not passed in stays held until its ttl.
local function release_held(index, slots)
  local held = redis.call('HGETALL', index)
  for i = 1, #held, 2 do
    local key = slots[held[i + 1]]
    if key then
      redis.call('ZREM', key, held[i])
      redis.call('HDEL', index, held[i])
    end
  end
end

-- Move the parked tasks whose members start with ``prefix`` back to their lanes, lane n
-- being KEYS[first_lane + n]; returns how many. Parked members are
-- '<site>|<task id>|<lane>|<task>', all scored 0, so a site's or a task's are one
-- lexicographic range ('}' sorts right after '|'); see _keys.parked_member.
local function unpark(parked, prefix, first_lane)
  local upper = '(' .. string.sub(prefix, 1, -2) .. '}'
  local members = redis.call('ZRANGEBYLEX', parked, '[' .. prefix, upper)
  for _, member in ipairs(members) do
    local a = string.find(member, '|', 1, true)
    local b = string.find(member, '|', a + 1, true)
    local lane = tonumber(string.sub(member, b + 1, b + 1))
    redis.call('XADD', KEYS[first_lane + lane], '*', 't', string.sub(member, b + 3))
    redis.call('ZREM', parked, member)
  end
  return #members
end

-- The consumer holding a pending entry, or false when nobody does.
local function owner_of(stream, group, id)
  local p = redis.call('XPENDING', stream, group, id, id, 1)
  if #p == 0 then return false end
  return p[1][2]
end
"""

APPEND = (
    _PRELUDE
    + """
-- KEYS: events, eids current, eids previous
-- ARGV: dedup ttl (s), then event_id, payload pairs
local ids = {}
for i = 2, #ARGV, 2 do
  ids[#ids + 1] = append(KEYS[1], KEYS[2], KEYS[3], ARGV[i], ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[2], ARGV[1], 'NX')
return ids
"""
)

ENQUEUE = (
    _PRELUDE
    + """
-- KEYS: seen (the older set: only read), events, eids current, eids previous,
--       lane 0 .. lane 2, seen count, then the seen bucket of each group's fingerprint
-- ARGV: dedup ttl (s), cap on tasks (0: none; -1: none, and the tasks enqueued are not
--       counted: a recrawl's revisits of pages counted already), then groups of:
--       fingerprint, its field in its bucket, lane, task, event_id, event
-- The task entry and its TaskEnqueued event are written only for an unseen fingerprint,
-- so fifty workers enqueueing one URL at once make exactly one task.
-- Returns per group: 1 enqueued, 0 seen already, 2 not seen but refused by the cap.
local new = {}
local cap = tonumber(ARGV[2])
local legacy = redis.call('EXISTS', KEYS[1]) == 1
local count = tonumber(redis.call('GET', KEYS[8]) or 0)
if legacy then count = count + redis.call('SCARD', KEYS[1]) end
local group, added = 0, 0
for i = 3, #ARGV, 6 do
  group = group + 1
  if cap > 0 and count >= cap then
    local bucket_has = redis.call('HEXISTS', KEYS[8 + group], ARGV[i + 1]) == 1
    if bucket_has or (legacy and redis.call('SISMEMBER', KEYS[1], ARGV[i]) == 1) then
      new[#new + 1] = 0
    else
      new[#new + 1] = 2
    end
  elseif mark_seen(legacy, KEYS[8 + group], ARGV[i + 1], ARGV[i]) then
    count, added = count + 1, added + 1
    redis.call('XADD', KEYS[5 + tonumber(ARGV[i + 2])], '*', 't', ARGV[i + 3])
    if ARGV[i + 4] ~= '' then  -- '': a queue that records no events (benchmarks only)
      append(KEYS[2], KEYS[3], KEYS[4], ARGV[i + 4], ARGV[i + 5])
    end
    new[#new + 1] = 1
  else
    new[#new + 1] = 0
  end
end
if cap >= 0 then redis.call('INCRBY', KEYS[8], added) end
redis.call('EXPIRE', KEYS[3], ARGV[1], 'NX')
return new
"""
)

SETTLE = (
    _PRELUDE
    + """
-- Record a leased task's progress, fenced on the store's epoch and the caller owning the
-- entry.
-- KEYS: lane, events, eids current, eids previous, ckpt, requeue lane, delayed, parked,
--       actions, control, the consumer's fetches started (hash task id -> '': see
--       POLITENESS_ACQUIRE; the task cleared from it by every mode but 'note': the page's
--       write, or the lease's end; a note, an action's marker, is written while the
--       page's request may still be unrecorded), identity, restored, primary
-- ARGV: [1] dedup ttl (s), [2] the job's epoch the caller holds its lease in ('0': not
--       checked), [3] '' for a lease, or, for an entry a restore added that a journal
--       flush adopts, its mapping in ``restored`` ('<lane>|<entry id>'), [4] group,
--       [5] consumer, [6] entry id, [7] mode, [8] task id, [9] task payload (requeue,
--       delay, park), [10] delay ms, [11] action field or, to park, the site's pause flag,
--       [12] action value or the task's pause flag, then event_id, payload pairs from
--       [13]; the last pair is the step's marker event.
-- mode: 'ckpt'    append, point ckpt at the last event ('id|payload'), renew the lease
--       'note'    append (and set an action marker), renew the lease
--       'finish'  append, ack and delete the entry, drop the ckpt pointer
--       'requeue' append, ack and delete the entry, add the task to the requeue lane
--       'delay'   append, ack and delete the entry, hold the task until TIME + delay
--       'park'    append, ack and delete the entry, park the task until resumed; but
--                 only if a pause flag is still set: a worker that saw the pause a moment
--                 ago must not park a task that was just resumed (nobody would unpark it)
--       'started' no events: put the task in the consumer's fetches started (KEYS[11]),
--                 as POLITENESS_ACQUIRE does: a request sent on a worker's own slot while
--                 the store was down, journalled before it went, sent by the flush
-- A caller of another epoch than the store's (a lease of before a restore, or a store that
-- lost the job: no identity) is refused with {'stale', the store's epoch or ''}: nothing
-- written. An adopted entry must still be the restore's, in its lane and claimed by nobody
-- since; else {'lost', its owner if any}. A checked caller on another primary than the one
-- the epoch is bound to (``primary``: a promotion nobody followed yet, see FOLLOW_PRIMARY)
-- is refused as stale too, with the same epoch: it follows the promotion, then sends again.
if ARGV[2] ~= '0' then
  local epoch = redis.call('HGET', KEYS[12], 'epoch')
  if epoch ~= ARGV[2] then return {'stale', epoch or ''} end
  local bound = redis.call('HGET', KEYS[14], 'replid')
  if bound then
    -- A user whose ACL refuses INFO cannot tell: the check is left to those who can.
    local info = redis.pcall('INFO', 'replication')
    if type(info) == 'string' and string.match(info, 'master_replid:(%x+)') ~= bound then
      return {'stale', epoch}
    end
  end
end
local group, consumer, entry, mode, task_id = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local adopted = ARGV[3] ~= ''
if mode == 'park' and redis.call('HEXISTS', KEYS[10], ARGV[11]) == 0
    and redis.call('HEXISTS', KEYS[10], ARGV[12]) == 0 then
  return {'resumed'}
end
-- The marker event's id is checked before ownership: a retry of a call that went through
-- finds the entry already acked, and must be told "done", not "lease lost".
if #ARGV >= 14 and seen(KEYS[3], KEYS[4], ARGV[#ARGV - 1]) then
  return {'dup'}
end
local owner = owner_of(KEYS[1], group, entry)
if adopted then
  if owner then return {'lost', owner} end
  if redis.call('HGET', KEYS[13], task_id) ~= ARGV[3]
      or #redis.call('XRANGE', KEYS[1], entry, entry) == 0 then
    return {'lost'}
  end
elseif owner ~= consumer then
  return {'lost', owner}
end
if mode == 'started' then
  redis.call('HSET', KEYS[11], task_id, '')
  return {'ok', false}
end
local last = false
for i = 13, #ARGV, 2 do
  last = append(KEYS[2], KEYS[3], KEYS[4], ARGV[i], ARGV[i + 1])
end
if mode ~= 'note' then redis.call('HDEL', KEYS[11], task_id) end
if mode == 'ckpt' or mode == 'note' then
  if mode == 'ckpt' then
    -- The pointer carries the checkpoint itself: a restart reads 100,000 of them with
    -- one HMGET a chunk, instead of an XRANGE each.
    redis.call('HSET', KEYS[5], task_id, last .. '|' .. ARGV[#ARGV])
  elseif ARGV[11] ~= '' then
    redis.call('HSET', KEYS[9], ARGV[11], ARGV[12])
  end
  if not adopted then
    redis.call('XCLAIM', KEYS[1], group, consumer, 0, entry, 'JUSTID')
  end
else
  redis.call('XACK', KEYS[1], group, entry)
  redis.call('XDEL', KEYS[1], entry)
  if adopted then redis.call('HDEL', KEYS[13], task_id) end
  if mode == 'requeue' then
    redis.call('XADD', KEYS[6], '*', 't', ARGV[9])
  elseif mode == 'delay' then
    local now = redis.call('TIME')
    local due = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + tonumber(ARGV[10])
    redis.call('ZADD', KEYS[7], due, ARGV[9])
  elseif mode == 'park' then
    redis.call('ZADD', KEYS[8], 0, ARGV[9])
  else
    redis.call('HDEL', KEYS[5], task_id)
  end
end
redis.call('EXPIRE', KEYS[3], ARGV[1], 'NX')
return {'ok', last}
"""
)

PRIMARY_FACTS = """
-- What tells whether the primary a job's epoch is bound to still answers.
-- KEYS: identity, primary.  ARGV: none.
-- Returns {this server's replication id, its previous one ('000...' if none: it was
-- promoted by no failover), the bound id or '', the job's epoch or '', then field, value
-- pairs of ``primary``}. Both ids are '' where the caller's ACL refuses INFO (the
-- ``-@dangerous`` recipe of docs/eventlog.md): it cannot tell a promotion.
local info = redis.pcall('INFO', 'replication')
if type(info) ~= 'string' then info = '' end
return {
  string.match(info, 'master_replid:(%x+)') or '', string.match(info, 'master_replid2:(%x+)') or '',
  redis.call('HGET', KEYS[2], 'replid') or '', redis.call('HGET', KEYS[1], 'epoch') or '',
  redis.call('HGETALL', KEYS[2]),
}
"""

FOLLOW_PRIMARY = """
-- Bind a job's epoch to the primary this runs on, or raise the epoch once for a promotion.
-- KEYS: identity, primary, the projector's published position.
-- ARGV: [1] the replication id the caller found bound ('' for none), [2] the id of the
--       server it read (PRIMARY_FACTS), [3] 'bind' (record that id) or 'raise' (also raise
--       the epoch by one, and record the projector's position at the raise).
-- Fenced: nothing is done unless this server is still the one read and the binding is
-- still the one read, so of all the processes that notice one promotion, one raises.
-- Returns {'bound' | 'raised' | 'moved' (nothing done: read again) | 'none' (no identity:
-- nothing to fence), the epoch now}.
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if not epoch then return {'none', ''} end
if string.match(redis.call('INFO', 'replication'), 'master_replid:(%x+)') ~= ARGV[2]
    or (redis.call('HGET', KEYS[2], 'replid') or '') ~= ARGV[1] then
  return {'moved', epoch}
end
redis.call('HSET', KEYS[2], 'replid', ARGV[2])
if ARGV[3] ~= 'raise' then return {'bound', epoch} end
epoch = tostring(redis.call('HINCRBY', KEYS[1], 'epoch', 1))
redis.call('HSET', KEYS[2], 'failover:' .. epoch, redis.call('GET', KEYS[3]) or '')
return {'raised', epoch}
"""

PROMOTE = """
-- Move delayed tasks whose time has come (server TIME) back to their lanes.
-- KEYS: delayed, lane 0 .. lane n.  ARGV: max tasks.  Members are '<lane>|<task>'.
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms, 'LIMIT', 0, ARGV[1])
for _, member in ipairs(due) do
  local lane = tonumber(string.sub(member, 1, 1))
  redis.call('XADD', KEYS[2 + lane], '*', 't', string.sub(member, 3))
  redis.call('ZREM', KEYS[1], member)
end
return #due
"""

CONTROL = (
    _PRELUDE
    + """
-- An operator's pause or resume: the event and the flag workers poll, atomically.
-- KEYS: events, eids current, eids previous, control, parked, lane 0 .. lane n
-- ARGV: dedup ttl (s), event_id, event, flag field, flag value ('' to clear),
--       prefix of the parked tasks to move back to their lanes ('' for none): '<site>|'
--       for a site, '<site>|<task id>|' for one task (see unpark).
append(KEYS[1], KEYS[2], KEYS[3], ARGV[2], ARGV[3])
if ARGV[5] == '' then
  redis.call('HDEL', KEYS[4], ARGV[4])
else
  redis.call('HSET', KEYS[4], ARGV[4], ARGV[5])
end
local moved = 0
if ARGV[6] ~= '' then
  moved = unpark(KEYS[5], ARGV[6], 6)
end
redis.call('EXPIRE', KEYS[2], ARGV[1], 'NX')
return moved
"""
)

RESOLVE = (
    _PRELUDE
    + """
-- A person's decision about an uncertain action of a paused task: the ActionResolved event,
-- its marker ('done', 'aborted' to fail the task, or none to run it again) and the task
-- resumed (its TaskResumed event, its pause flag cleared, the task back in its lane), in
-- one step.
-- KEYS: events, eids current, eids previous, actions, awaiting, control, parked,
--       lane 0 .. lane n
-- ARGV: dedup ttl (s), task id, action field ('<task id>|<action id>'), decision ('done',
--       'redo' or 'abort'), the task's pause flag, prefix of its parked member
--       ('<site>|<task id>|'),
--       then the event_id, event pairs of ActionResolved and TaskResumed.
-- Refused ({'refused'}, nothing written) unless the action's marker still says 'intended'
-- and the task is still paused: a decision made twice, or about an action running now,
-- changes nothing.
if redis.call('HGET', KEYS[4], ARGV[3]) ~= 'intended'
    or redis.call('HEXISTS', KEYS[6], ARGV[5]) == 0 then
  return {'refused'}
end
if ARGV[4] == 'done' then
  redis.call('HSET', KEYS[4], ARGV[3], 'done')
elseif ARGV[4] == 'abort' then
  redis.call('HSET', KEYS[4], ARGV[3], 'aborted')
else
  redis.call('HDEL', KEYS[4], ARGV[3])
end
redis.call('HDEL', KEYS[5], ARGV[2])
append(KEYS[1], KEYS[2], KEYS[3], ARGV[7], ARGV[8])
append(KEYS[1], KEYS[2], KEYS[3], ARGV[9], ARGV[10])
redis.call('HDEL', KEYS[6], ARGV[5])
local moved = unpark(KEYS[7], ARGV[6], 8)
redis.call('EXPIRE', KEYS[2], ARGV[1], 'NX')
return {'ok', moved}
"""
)

LEFT = """
-- What is left of a job, in one step: tasks not finished (in a lane, leased, delayed for a
-- retry, or parked), and those of them parked for a person to decide about an uncertain
-- action, which no worker can move on.
-- KEYS: delayed, parked, awaiting, lane 0 .. lane n.  ARGV: none.
-- Returns {tasks not finished, task ids waiting for a person...}.
local left = redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2])
for i = 4, #KEYS do left = left + redis.call('XLEN', KEYS[i]) end
local out = {left}
local awaiting = redis.call('HGETALL', KEYS[3])
for i = 1, #awaiting, 2 do
  -- Parked as '<site>|<task id>|...': a task paused but not parked yet still runs.
  local site = string.match(awaiting[i + 1], '^[^|]*')  -- a site has no '|'; an action may
  local prefix = site .. '|' .. awaiting[i] .. '|'
  local upper = '(' .. string.sub(prefix, 1, -2) .. '}'
  if #redis.call('ZRANGEBYLEX', KEYS[2], '[' .. prefix, upper, 'LIMIT', 0, 1) > 0 then
    out[#out + 1] = awaiting[i]
  end
end
return out
"""

CLAIM_URL = (
    _PRELUDE
    + """
-- May this task fetch the URL of this fingerprint through a redirect? Yes if nobody has it
-- (it is then marked seen, so no task is ever enqueued for it) or this same task claimed
-- it before (a retry, or a restart, following the same redirect).
-- KEYS: seen (the older set), redirected, the fingerprint's seen bucket, seen count.
-- ARGV: fingerprint, task id, its field in its bucket, and '0' to leave it out of the
--       seen count (a page an earlier run counted: `recrawl --due` marks those not due).
-- Returns 1 or 0.
if mark_seen(redis.call('EXISTS', KEYS[1]) == 1, KEYS[3], ARGV[3], ARGV[1]) then
  if ARGV[4] ~= '0' then redis.call('INCR', KEYS[4]) end
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  return 1
end
if redis.call('HGET', KEYS[2], ARGV[1]) == ARGV[2] then
  return 1
end
return 0
"""
)

TAKE_PAGE = """
-- One more page for the job within its cap (``--max-pages``): a task's next page, counted
-- with the tasks in the seen count (a task's first page is counted when it is enqueued).
-- A reply lost and the call retried counts one page twice: the bound errs low, never high.
-- KEYS: seen (the older set: only read), seen count
-- ARGV: cap (> 0).  Returns 1 if the page may be fetched (it is counted now), else 0.
local count = tonumber(redis.call('GET', KEYS[2]) or 0)
if redis.call('EXISTS', KEYS[1]) == 1 then count = count + redis.call('SCARD', KEYS[1]) end
if count >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[2])
return 1
"""

RETRY = (
    _PRELUDE
    + """
-- An operator's retry of ended tasks: the TaskRetried event and the task back in its lane.
-- KEYS: events, eids current, eids previous, retries, ckpt, lane 0 .. lane n
-- ARGV: dedup ttl (s), then groups of: task id, ended attempt, lane, task payload,
--       checkpoint stream ID to resume after ('' to start over), event_id, event.
-- The caller saw each task ended at that attempt. ``retries`` remembers the attempt a
-- retry started from, so a second retry of the same ended attempt (two operators at once,
-- a command run twice) writes nothing: a task is never in a lane twice. Returns 1 per task
-- retried, 0 per task refused.
local out = {}
for i = 2, #ARGV, 7 do
  local task_id, ended = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', KEYS[4], task_id) == ended then
    out[#out + 1] = 0
  else
    redis.call('HSET', KEYS[4], task_id, ended)
    if ARGV[i + 4] ~= '' then
      -- finish dropped the pointer; the retry resumes after the last checkpoint.
      redis.call('HSET', KEYS[5], task_id, ARGV[i + 4])
    end
    append(KEYS[1], KEYS[2], KEYS[3], ARGV[i + 5], ARGV[i + 6])
    redis.call('XADD', KEYS[6 + tonumber(ARGV[i + 2])], '*', 't', ARGV[i + 3])
    out[#out + 1] = 1
  end
end
redis.call('EXPIRE', KEYS[2], ARGV[1], 'NX')
return out
"""
)

DEAD_REPLAY = (
    _PRELUDE
    + """
-- Put a dead letter back where it came from, once.
-- KEYS: dead, source stream (the events log or a task lane), eids current, eids previous
-- ARGV: dead letter id, dedup ttl (s), event_id ('' for a task entry), then the entry's
--       field, value pairs.
-- The dead letter is deleted in the same step, so replaying it twice puts it back once.
-- An event goes through the dedup window like any append.
if #redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1]) == 0 then
  return {'gone'}
end
local id
if ARGV[3] ~= '' then
  id = append(KEYS[2], KEYS[3], KEYS[4], ARGV[3], ARGV[5])
  redis.call('EXPIRE', KEYS[3], ARGV[2], 'NX')
else
  local fields = {}
  for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
  id = redis.call('XADD', KEYS[2], '*', unpack(fields))
end
redis.call('XDEL', KEYS[1], ARGV[1])
return {'ok', id}
"""
)

RENEW = (
    _PRELUDE
    + """
-- Renew the caller's leases (reset their idle time); returns the entry ids it lost.
-- KEYS: lane.  ARGV: group, consumer, entry ids...
-- XCLAIM with min-idle 0 would also steal another consumer's entry: check the owner first.
local lost = {}
for i = 3, #ARGV do
  if owner_of(KEYS[1], ARGV[1], ARGV[i]) == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
"""
)

RENEW_IDLE = """
-- Renew the caller's leases idle for at least min_idle ms (a backlog waiting its turn):
-- reset their idle time without counting a delivery. Up to count a lane, after the entry
-- id start ('-' or '(id'); returns {renewed, listed, last id listed or ''} for each lane.
-- KEYS: lanes.  ARGV: group, consumer, min idle ms, count, then one start a lane.
-- Only entries XPENDING lists as the caller's in this same script are claimed: XCLAIM with
-- min-idle 0 would otherwise take another consumer's entry.
local out = {}
for i = 1, #KEYS do
  local pending = redis.call('XPENDING', KEYS[i], ARGV[1], 'IDLE', ARGV[3], ARGV[4 + i], '+',
                             ARGV[4], ARGV[2])
  local renewed, last = 0, ''
  -- unpack() of too many values overflows Lua's stack: a thousand ids a call. (And only
  -- a last argument unpacks to all its values: the ids go in a table with JUSTID.)
  for j = 1, #pending, 1000 do
    local args = {KEYS[i], ARGV[1], ARGV[2], 0}
    for k = j, math.min(j + 999, #pending) do args[#args + 1] = pending[k][1] end
    args[#args + 1] = 'JUSTID'
    renewed = renewed + #redis.call('XCLAIM', unpack(args))
    last = args[#args - 1]
  end
  out[i] = {renewed, #pending, last}
end
return out
"""

CLAIM = """
-- New entries, up to count in all: first a quarter of count (rounded up) from the last
-- lane, recovered work, then highest-priority lane first. Recovered work still waits
-- behind most fresh work, but a crawl with an endless frontier would otherwise never come
-- back to the tasks of a worker that died: they would wait for the frontier to run dry.
-- Each entry comes with its task's ckpt value (false: none), so that a task starts
-- without a round trip for its resume point: nobody but the lease's holder writes it
-- while the entry is leased.
-- KEYS: lanes (the last is the recovery lane), then ckpt.  ARGV: group, consumer, count.
-- Returns {lane index, entries, ckpt values} triples.
local out = {}
local want = tonumber(ARGV[3])
local lanes = #KEYS - 1
local ckpt = KEYS[#KEYS]
local function read(i, n)
  local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', n,
                       'STREAMS', KEYS[i], '>')
  if r then
    local values = {}
    for j, entry in ipairs(r[1][2]) do
      -- An entry that is not one msgpack task (a poison entry) has no resume point: the
      -- worker dead-letters it.
      local ok, task = pcall(cmsgpack.unpack, entry[2][2] or '')
      local id = ok and type(task) == 'table' and task['task_id']
      values[j] = type(id) == 'string' and redis.call('HGET', ckpt, id)
    end
    out[#out + 1] = {i - 1, r[1][2], values}
    want = want - #r[1][2]
  end
end
if want > 0 then  -- COUNT 0 would mean no limit at all
  read(lanes, math.ceil(want / 4))
end
for i = 1, lanes do
  if want <= 0 then break end
  read(i, want)
end
return out
"""

PENDING = """
-- Pending entries of one consumer (its own PEL) idle for at least min idle ms, with their
-- delivery counts, without re-delivering them: the periodic re-read that picks up entries
-- whose XREADGROUP reply was lost (a restarted worker re-delivers its PEL with a plain
-- XREADGROUP from ID 0 instead, see TaskQueue.pending).
-- KEYS: lanes.  ARGV: group, consumer, count, min idle ms.
-- Returns {lane index, id, owner, deliveries, fields or false} per entry.
local out = {}
for i = 1, #KEYS do
  local p = redis.call('XPENDING', KEYS[i], ARGV[1], 'IDLE', ARGV[4], '-', '+', ARGV[3], ARGV[2])
  for _, e in ipairs(p) do
    local r = redis.call('XRANGE', KEYS[i], e[1], e[1])
    out[#out + 1] = {i - 1, e[1], e[2], e[4], #r > 0 and r[1][2] or false}
  end
end
return out
"""

EXPIRED = """
-- Leases of any consumer that the server saw idle for at least min idle ms, read without
-- taking them over: what RECOVER may move; and how soon the next one expires, among those
-- idle for min idle - horizon ms already (-1: none within the horizon), so that a worker
-- can look again right then instead of a whole period later. An entry deleted while
-- pending has nothing left to run: it is acked (as XCLAIM would drop it), not returned.
-- KEYS: lanes.  ARGV: group, count, min idle ms, horizon ms.
-- Returns {ms to the next expiry, {lane index, id, owner, deliveries + 1 (as a takeover
-- counts), fields}...}.
local out = {}
local want = tonumber(ARGV[2])
local min_idle = tonumber(ARGV[3])
local soonest = -1
for i = 1, #KEYS do
  if want <= 0 then soonest = 0; break end
  -- Idle past min - horizon, in id order: a reply cut at the count may leave some out.
  local limit = want + 100
  local p = redis.call('XPENDING', KEYS[i], ARGV[1], 'IDLE',
                       math.max(min_idle - tonumber(ARGV[4]), 0), '-', '+', limit)
  if #p == limit then soonest = 0 end
  for _, e in ipairs(p) do
    if e[3] < min_idle then
      if soonest < 0 or min_idle - e[3] < soonest then soonest = min_idle - e[3] end
    elseif want > 0 then
      local r = redis.call('XRANGE', KEYS[i], e[1], e[1])
      if #r > 0 then
        out[#out + 1] = {i - 1, e[1], e[2], e[4] + 1, r[1][2]}
        want = want - 1
      else
        redis.call('XACK', KEYS[i], ARGV[1], e[1])
      end
    else
      soonest = 0
    end
  end
end
return {soonest, out}
"""

RECOVER = (
    _PRELUDE
    + """
-- Move expired leases (read by EXPIRED), each in one step: ack and delete the entry and
-- append its event, with the task put in the recovery lane, or (an abort) its checkpoint
-- pointer dropped. The entry never passes through the mover's own pending list, so a mover
-- that stalls after this call holds nothing up. Moved only if still pending with the same
-- owner and delivery count and still idle for min idle ms: one whose owner renewed it, or
-- that another worker moved, since it was read is left alone. The owner's fenced writes
-- find the entry gone, as after any takeover.
-- An owner any of whose leases moved has its politeness slots freed in the same step: it
-- stopped renewing, so what it fetched is over or no longer its task, and the tasks it
-- held must not wait for its slots to expire.
-- KEYS: events, eids current, eids previous, ckpt, lane 0 .. lane n (the last: recovery),
--       then per owner of ARGV's holders: its slot index, then its hosts' slots keys
-- ARGV: [1] dedup ttl (s), [2] group, [3] min idle ms, [4] lanes, [5] moves, then groups
--       of 8 a move: lane index, entry id, owner, deliveries (as read), task id, task
--       payload ('' to abort), event_id ('' to append nothing: a queue that records no
--       events), event; then groups a holder: owner, host count, hosts (in the order of
--       their keys).  Returns 1 (moved) or 0 a move.
local group, idle, lanes = ARGV[2], ARGV[3], tonumber(ARGV[4])
local recovery = KEYS[4 + lanes]
local moved = {}
local freed = {}
local last = 5 + 8 * tonumber(ARGV[5])
for i = 6, last, 8 do
  local lane = KEYS[5 + tonumber(ARGV[i])]
  local id = ARGV[i + 1]
  local p = redis.call('XPENDING', lane, group, 'IDLE', idle, id, id, 1)
  if #p == 1 and p[1][2] == ARGV[i + 2] and p[1][4] == tonumber(ARGV[i + 3]) then
    redis.call('XACK', lane, group, id)
    redis.call('XDEL', lane, id)
    if ARGV[i + 5] ~= '' then
      redis.call('XADD', recovery, '*', 't', ARGV[i + 5])
    else
      redis.call('HDEL', KEYS[4], ARGV[i + 4])
    end
    if ARGV[i + 6] ~= '' then
      append(KEYS[1], KEYS[2], KEYS[3], ARGV[i + 6], ARGV[i + 7])
    end
    freed[ARGV[i + 2]] = true
    moved[#moved + 1] = 1
  else
    moved[#moved + 1] = 0
  end
end
local k, a = 5 + lanes, last + 1
while a <= #ARGV do
  local owner, count = ARGV[a], tonumber(ARGV[a + 1])
  local slots = {}
  for h = 1, count do slots[ARGV[a + 1 + h]] = KEYS[k + h] end
  if freed[owner] then release_held(KEYS[k], slots) end
  k, a = k + 1 + count, a + 2 + count
end
redis.call('EXPIRE', KEYS[2], ARGV[1], 'NX')
return moved
"""
)

DEAD_LETTER = """
-- Move an entry aside with the reason; a task entry is also acked and deleted.
-- KEYS: source stream, dead.  ARGV: group ('' for the events log), entry id, reason,
-- deliveries, then the entry's field, value pairs.
-- The events log is never deleted from here: an event is only ever removed by trimming
-- after it is archived, so a poison event is copied and the reader skips past it.
local fields = {'stream', KEYS[1], 'entry', ARGV[2], 'reason', ARGV[3], 'deliveries', ARGV[4]}
for i = 5, #ARGV, 2 do
  fields[#fields + 1] = 'field:' .. ARGV[i]
  fields[#fields + 1] = ARGV[i + 1]
end
local id = redis.call('XADD', KEYS[2], '*', unpack(fields))
if ARGV[1] ~= '' then
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
  redis.call('XDEL', KEYS[1], ARGV[2])
end
return id
"""

LOCK_ACQUIRE = """
-- KEYS: lock.  ARGV: token, ttl ms.  Takes a free lock, or refreshes one we hold.
-- Refreshed with PEXPIRE, which a server out of memory runs (it refuses a SET): a holder
-- stays alive through a full server instead of seeming gone once its TTL runs out.
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""

LOCK_TAKE_OVER = """
-- KEYS: lock.  ARGV: the value read (a holder known to be dead), token, ttl ms.
-- Takes the lock only if that holder still has it: of two restarts, one takes it.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""

LOCK_RELEASE = """
-- KEYS: lock.  ARGV: token.  Deletes the lock only if we still hold it.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

CHECKPOINT_VALUES = """
-- The ckpt values of many tasks ('id|payload', a bare id, or false), in task order.
-- KEYS: ckpt.  ARGV: task ids joined by newlines: one argument instead of 100,000 keeps
-- the client from spending more time packing the command than the server answering it.
local ids = {}
for task_id in string.gmatch(ARGV[1], '[^\\n]+') do ids[#ids + 1] = task_id end
local out = {}
for first = 1, #ids, 1000 do  -- unpack() of more than a few thousand overflows Lua's stack
  local values = redis.call('HMGET', KEYS[1], unpack(ids, first, math.min(first + 999, #ids)))
  for n = 1, #values do out[#out + 1] = values[n] end
end
return out
"""

CHECKPOINTS = """
-- The last checkpoint of each task whose pointer is a bare stream ID (see SETTLE):
-- its stream ID and stored event, in one round trip.
-- KEYS: ckpt, events.  ARGV: task ids joined by newlines (one argument: a restart asks for
-- 100,000 at once, and packing that many arguments costs the client more than the reads).
-- Returns {stream id or false, payload or false} per task.
-- A pointer whose event was trimmed returns its ID alone: read it from the archive.
local out = {}
for task_id in string.gmatch(ARGV[1], '[^\\n]+') do
  local id = redis.call('HGET', KEYS[1], task_id)
  local payload = false
  if id then
    id = string.match(id, '^[^|]+')  -- 'id|payload' where a worker checkpointed since
    local r = redis.call('XRANGE', KEYS[2], id, id)
    if #r > 0 then payload = r[1][2][2] end
  end
  out[#out + 1] = {id, payload}
end
return out
"""

REBUILD_CKPT = """
-- Point the ckpt index at checkpoints found by replaying the log, never backwards.
-- KEYS: ckpt.  ARGV: task id, stream id pairs ('' as stream id: the task is terminal).
-- A worker may checkpoint while this runs: a pointer newer than the replayed one stays.
local function older(a, b)
  local a_ms, a_seq = string.match(a, '(%d+)-(%d+)')
  local b_ms, b_seq = string.match(b, '(%d+)-(%d+)')
  a_ms, a_seq, b_ms, b_seq = tonumber(a_ms), tonumber(a_seq), tonumber(b_ms), tonumber(b_seq)
  return a_ms < b_ms or (a_ms == b_ms and a_seq < b_seq)
end
local changed = 0
for i = 1, #ARGV, 2 do
  local current = redis.call('HGET', KEYS[1], ARGV[i])
  if ARGV[i + 1] == '' then
    changed = changed + redis.call('HDEL', KEYS[1], ARGV[i])
  elseif current == false or older(current, ARGV[i + 1]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    changed = changed + 1
  end
end
return changed
"""

POLITENESS_ACQUIRE = """
-- Take a slot on a host if it has a free one and its next start time has come.
-- KEYS: slots (zset token -> expiry ms), next (ms), delay override (ms), and optionally
--       the holder's slot index (hash token -> host: see RELEASE_HELD) and, after it,
--       the adapted delay (ms: see POLITENESS_OBSERVE) and the holder's fetches started
--       (hash task id -> '': see SETTLE)
-- ARGV: token, per-host limit, delay ms, slot ttl ms, longest wait for a release ms, and
--       with the index, the host and the task the slot is for ('': none)
-- With the index, it also frees slots the same holder is done with, first (a release
-- that rides on the holder's next acquire instead of a round trip of its own): KEYS[7..]
-- the slots key of each one's host, ARGV[8..] their tokens, in the same order.
-- Returns {0, start ms, 0, the delay ms that applies} when the slot is taken ({0, start
-- ms} when a retry finds it held), else {ms to wait, now, 1 if every slot of the host is
-- held (the wait is a poll for a release) else 0 (the wait is the delay: the slot is free
-- at its end)}; all server time.
for i = 8, #ARGV do
  redis.call('ZREM', KEYS[i - 1], ARGV[i])
  redis.call('HDEL', KEYS[4], ARGV[i])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
-- A redis-py retry whose first reply was lost must find its slot, not wait for the delay.
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if expiry then return {0, tonumber(expiry) - ttl} end
local wait = tonumber(redis.call('GET', KEYS[2]) or now) - now
local full = 0
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  -- A holder may release at any moment: ask again soon, or when the first slot expires.
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  wait = math.max(wait, math.min(tonumber(first[2]) - now, tonumber(ARGV[5])))
  full = 1
end
if wait > 0 then return {wait, now, full} end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
-- The key lives as long as its latest slot (a worker may run with a longer slot ttl).
redis.call('PEXPIREAT', KEYS[1], redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
if KEYS[4] then
  -- Kept as long as the holder's latest slot: entries of slots that expired meanwhile
  -- are only freed again (a no-op), never counted.
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[6])
  redis.call('PEXPIRE', KEYS[4], ttl)
  -- Before the request goes (the reply comes first): a kill after it finds the task here,
  -- and its retake counts the request the log may never have heard of. Kept until the
  -- write of the page clears it, however long the lease outlives the slot.
  if ARGV[7] and ARGV[7] ~= '' then redis.call('HSET', KEYS[6], ARGV[7], '') end
end
-- The site's own Crawl-delay, ours and the one adapted to the host's latency (with
-- --autothrottle: POLITENESS_OBSERVE) are all minimums: the longest one applies.
local delay = math.max(tonumber(ARGV[3]), tonumber(redis.call('GET', KEYS[3]) or 0))
if KEYS[5] then delay = math.max(delay, tonumber(redis.call('GET', KEYS[5]) or 0)) end
if delay > 0 then redis.call('SET', KEYS[2], now + delay, 'PX', delay) end
return {0, now, 0, delay}
"""

FETCH_STARTED = """
-- Record that a task's request may go, on a slot its worker holds already (handed over
-- from the worker's request before it, crawler._handover): what POLITENESS_ACQUIRE
-- records with a slot it hands out, before the request goes.
-- KEYS: the holder's fetches started (hash task id -> '': see SETTLE)
-- ARGV: the task id
redis.call('HSET', KEYS[1], ARGV[1], '')
return 1
"""

POLITENESS_OBSERVE = """
-- Fold one fetch's latency into a host's adapted delay (--autothrottle), atomically, so
-- that the samples of every worker combine. The algorithm is crawler._autothrottle's
-- next_delay_ms, step for step on the same numbers (a test holds them to one answer).
-- KEYS: the adapted delay (ms)
-- ARGV: latency ms, the sample's kind ('ok', 'other' or 'throttled'), target concurrency,
--       floor ms, max ms, ttl ms, throttled factor, throttled least delay ms
-- Returns the new delay (ms).
local floor, max = tonumber(ARGV[4]), tonumber(ARGV[5])
local old = math.min(math.max(tonumber(redis.call('GET', KEYS[1]) or floor), floor), max)
local wanted = tonumber(ARGV[1]) / tonumber(ARGV[3])
local kind = ARGV[2]
local new
if kind == 'throttled' then
  new = math.max(old * tonumber(ARGV[7]), wanted, tonumber(ARGV[8]))
else
  new = math.max(wanted, (old + wanted) / 2)
end
new = math.floor(math.min(math.max(new, floor), max) + 0.5)
-- Error pages and redirects are small and fast: they may raise the delay, never lower it.
if kind ~= 'ok' and new < old then new = old end
redis.call('SET', KEYS[1], new, 'PX', ARGV[6])
return new
"""

RELEASE_HELD = (
    _PRELUDE
    + """
-- Free every slot a holder holds: the slots a worker killed mid-request left behind, freed
-- by its restart under the same name before it runs anything (see TaskQueue.take_back_all).
-- KEYS: the holder's slot index, then the slots key of each host it lists.
-- ARGV: those hosts, in the order of their keys.
local slots = {}
for i = 1, #ARGV do slots[ARGV[i]] = KEYS[i + 1] end
release_held(KEYS[1], slots)
"""
)

COOKIES_READ = """
-- A site's cookie jar, unless the caller's copy is current.
-- KEYS: the jar's version (counter), the jar (hash field -> cookie).
-- ARGV: the version of the caller's copy.
-- Returns {version} when that is the caller's, else {version, field, cookie, ...}.
local version = redis.call('GET', KEYS[1]) or '0'
if version == ARGV[1] then return {version} end
local jar = redis.call('HGETALL', KEYS[2])
table.insert(jar, 1, version)
return jar
"""

COOKIES_WRITE = """
-- Change a site's cookie jar and bump its version, in one step.
-- KEYS: the sites with a jar (set), the jar (hash field -> cookie), its version (counter).
-- ARGV: the site, the version of the caller's copy, then field, cookie pairs ('' as the
--       cookie: delete that field).
-- Returns {new version, 1 if the caller's copy was current before this change else 0}.
local before = redis.call('GET', KEYS[3]) or '0'
for i = 3, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[2], ARGV[i])
  else
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  end
end
redis.call('SADD', KEYS[1], ARGV[1])
local after = redis.call('INCR', KEYS[3])
if before == ARGV[2] then return {after, 1} end
return {after, 0}
"""

COOKIES_CLEAR = """
-- Empty a site's cookie jar; its version is bumped (never reset), so that every worker's
-- copy is found stale.
-- KEYS: the sites with a jar (set), the jar (hash), its version (counter).
-- ARGV: the site.
-- Returns how many cookies were dropped.
local dropped = redis.call('HLEN', KEYS[2])
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[1], ARGV[1])
redis.call('INCR', KEYS[3])
return dropped
"""

BROWSER_SESSION_SAVE = """
-- Replace an identity's browser session by its next version, if the caller's copy is the
-- current one: the state and its version in one step, so a save never leaves half a state.
-- KEYS: the identities with a session (set), the session (hash version, state).
-- ARGV: the identity, the version of the caller's copy, the encoded state.
-- Returns {version after the call, 1 if saved else 0}; the save's time (server TIME, ms) is
-- kept beside them for ``crawlog sessions``.
local current = tonumber(redis.call('HGET', KEYS[2], 'version') or '0')
if current ~= tonumber(ARGV[2]) then return {current, 0} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[2], 'version', current + 1, 'state', ARGV[3], 'saved_at', now)
redis.call('SADD', KEYS[1], ARGV[1])
return {current + 1, 1}
"""

ROBOTS_STORE = """
-- Keep a site's robots.txt for its lifetime and wake the workers waiting for it.
-- KEYS: robots (the stored response), fetch lock, ready list.
-- ARGV: the encoded response, its lifetime ms, the fetcher's token, the ready list's ttl ms.
-- The lock is released only if the token still holds it (one that expired meanwhile may
-- be another worker's by now).
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
redis.call('DEL', KEYS[3])
redis.call('RPUSH', KEYS[3], 1)
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return 1
"""

RESTORE_LANE = """
-- Put restored tasks back in one lane, each as a new entry (``crawlog restore``), and
-- note each one's entry in ``restored`` (task id -> '<lane>|<entry id>'): a journal flush
-- finds there the entry of a task its worker held before the loss.
-- KEYS: the lane, restored.
-- ARGV: the lane's number, then task id, encoded task pairs.
-- Returns how many were added.
for i = 2, #ARGV, 2 do
  local id = redis.call('XADD', KEYS[1], '*', 't', ARGV[i + 1])
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[1] .. '|' .. id)
end
return (#ARGV - 1) / 2
"""

RESTORE_SEEN = """
-- Mark fingerprints seen again, a batch of buckets at a time (``crawlog restore``).
-- KEYS: the seen count, then the seen buckets.
-- ARGV: per bucket (in KEYS' order), its fields concatenated, each ARGV[#ARGV] bytes long;
--       then that length. A bucket's fields are one argument: a million fingerprints are
--       then a few thousand arguments to send, not two million.
-- Returns how many were new (added to the seen count too).
local size = tonumber(ARGV[#ARGV])
local added = 0
for i = 2, #KEYS do
  local blob = ARGV[i - 1]
  -- One HSET for up to a thousand fields (a bucket holds some hundreds at ten million
  -- URLs; unpack has a limit).
  local pairs = {}
  for j = 1, #blob, size do
    pairs[#pairs + 1] = string.sub(blob, j, j + size - 1)
    pairs[#pairs + 1] = ''
    if #pairs >= 2000 or j + size > #blob then
      added = added + redis.call('HSET', KEYS[i], unpack(pairs))
      pairs = {}
    end
  end
end
redis.call('INCRBY', KEYS[1], added)
return added
"""

# --- Claiming around busy sites (fair share between sites) -------------------------------

CLAIM_AROUND = """
-- CLAIM, but an entry whose task's site is one of the busy sites the caller names is not
-- handed out: it is moved to the end of its own lane (XACK, XDEL, XADD of the same task,
-- all inside this call, so no lease ever exists for it and nothing is written to the log).
-- A worker whose tasks of a site already wait for that site's politeness slots names it,
-- so that its free places go to sites that can be fetched now instead of to more waiting.
-- Each lane's next entries (up to budget of them) are read first without delivering them:
-- only busy entries in front of an entry handed out are moved; when every one of them is
-- busy, they are all moved only if a task of another site follows them (within
-- look-ahead entries past them, or past the caller's cursor: so that the next call gets
-- closer to it); else nothing is written, and the lane's cursor moves past the busy
-- entries read. The cursor (one per lane, the caller's: '' for none) is where this
-- consumer last found only busy entries: read again from there, a lane of one busy site
-- is scanned once, not moved round and round behind itself by every call. Valid for one
-- set of busy sites (the caller drops it when the set changes): entries are only ever
-- appended, so every entry past it is one not read yet.
-- KEYS: lanes (the last is the recovery lane), then ckpt.
-- ARGV: group, consumer, count, budget, look-ahead, then a cursor per lane, then the busy
--       sites (a task's 'site').
-- Returns {moved, {lane index, entries, ckpt values} triples, the cursors}.
local out = {}
local want = tonumber(ARGV[3])
local budget = tonumber(ARGV[4])
local look = tonumber(ARGV[5])
local lanes = #KEYS - 1
local ckpt = KEYS[#KEYS]
local cursors = {}
for i = 1, lanes do cursors[i] = ARGV[5 + i] end
local busy = {}
for i = 6 + lanes, #ARGV do busy[ARGV[i]] = true end
local moved = 0
local function task_of(payload)
  local ok, task = pcall(cmsgpack.unpack, payload or '')
  if ok and type(task) == 'table' then return task end
  return {}
end
local function last_delivered(stream)
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
    local fields = {}
    for j = 1, #g, 2 do fields[g[j]] = g[j + 1] end
    if fields['name'] == ARGV[1] then return fields['last-delivered-id'] end
  end
  return '0-0'
end
local function later(a, b)
  local ams, aseq = string.match(a, '^(%d+)-(%d+)$')
  local bms, bseq = string.match(b, '^(%d+)-(%d+)$')
  if tonumber(ams) ~= tonumber(bms) then return tonumber(ams) > tonumber(bms) end
  return tonumber(aseq) > tonumber(bseq)
end
local function is_busy(entry)
  local site = task_of(entry[2][2])['site']
  return type(site) == 'string' and busy[site] == true
end
-- Whether lane i has a task of a site not busy past the entry ``after``.
local function another_site_further(i, after)
  local from = after
  if cursors[i] ~= '' and later(cursors[i], from) then from = cursors[i] end
  for _, entry in ipairs(redis.call('XRANGE', KEYS[i], '(' .. from, '+', 'COUNT', look)) do
    if not is_busy(entry) then return true end
    cursors[i] = entry[1]
  end
  return false
end
local function read(i, n)
  if redis.call('EXISTS', KEYS[i]) == 0 then return end
  local ahead = redis.call('XRANGE', KEYS[i], '(' .. last_delivered(KEYS[i]), '+',
                           'COUNT', budget)
  -- How many of the next entries to take: up to the n-th one that is not busy.
  local take, found = 0, 0
  for j, entry in ipairs(ahead) do
    if found >= n then break end
    local site = task_of(entry[2][2])['site']
    if not (type(site) == 'string' and busy[site]) then
      take, found = j, found + 1
    end
  end
  if take == 0 and #ahead >= budget and another_site_further(i, ahead[#ahead][1]) then
    take = #ahead
  end
  if take == 0 then return end
  local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', take,
                       'STREAMS', KEYS[i], '>')
  local entries, values = {}, {}
  for _, entry in ipairs(r[1][2]) do
    local payload = entry[2][2]
    local task = task_of(payload)
    local site = task['site']
    if type(site) == 'string' and busy[site] and #entry[2] == 2 then
      redis.call('XACK', KEYS[i], ARGV[1], entry[1])
      redis.call('XDEL', KEYS[i], entry[1])
      redis.call('XADD', KEYS[i], '*', entry[2][1], payload)
      moved = moved + 1
    else
      -- An entry that is not one msgpack task (a poison entry) has no resume point: the
      -- worker dead-letters it.
      local id = task['task_id']
      entries[#entries + 1] = entry
      values[#entries] = type(id) == 'string' and redis.call('HGET', ckpt, id)
    end
  end
  if #entries > 0 then
    out[#out + 1] = {i - 1, entries, values}
    want = want - #entries
  end
end
if want > 0 then
  read(lanes, math.ceil(want / 4))
end
for i = 1, lanes do
  if want <= 0 then break end
  read(i, want)
end
return {moved, out, cursors}
"""

# -- The projector's lease (eventlog/_projector_lease.py) --------------------------------

PROJECTOR_LEASE_RENEW = """
-- Renew the projector's lease, or take it back once it lapsed if nobody committed since.
-- KEYS: the lease, the published position, the job's identity.
-- ARGV: the holder's value, ttl ms, the position this holder last published ('' if none),
--       the job's epoch the holder started in ('0': not checked).
-- A lease that lapsed (its holder stalled) and was taken by nobody is taken back only if
-- the published position is still this holder's: another projector's commit (or trim)
-- in between means this one's state is stale, and it must stop (0). A lease gone with the
-- store's data is no takeover: -1 when the identity is gone or of another epoch.
if ARGV[4] ~= '0' and redis.call('HGET', KEYS[3], 'epoch') ~= ARGV[4] then return -1 end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder == false and (redis.call('GET', KEYS[2]) or '') == ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""

PROJECTOR_PUBLISH = """
-- Publish the projector's committed position and trim the log below it, only if the
-- caller holds the projector's lease (fenced: a projector that lost it does neither).
-- KEYS: the lease, the published position, the events stream, the last committer, the
--       job's identity.
-- ARGV: the holder's value, ttl ms, the position, the MINID to trim to ('' for none), the
--       job's epoch the holder started in ('0': not checked).
-- Returns {1, entries trimmed}, {0, 0} if the lease is another's, or {-1, 0} if the store
-- lost the job (its identity gone or of another epoch): nothing done.
if ARGV[5] ~= '0' and redis.call('HGET', KEYS[5], 'epoch') ~= ARGV[5] then return {-1, 0} end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {0, 0} end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[3])
redis.call('SET', KEYS[4], ARGV[1])
redis.call('PUBLISH', KEYS[2], ARGV[3])
local trimmed = 0
if ARGV[4] ~= '' then trimmed = redis.call('XTRIM', KEYS[3], 'MINID', ARGV[4]) end
return {1, trimmed}
"""
