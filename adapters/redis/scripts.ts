import { ErrorReply } from "@redis/client"
import { createHash } from "node:crypto"
import type { Client } from "./connection.js"

/**
 * The queue's Lua scripts: each one round trip, its commands atomic. They name the lanes' keys
 * themselves (a lane per account, made and dropped as jobs come and go): the queue needs one
 * Redis, not a Redis Cluster.
 */

/**
 * Adds each job (ARGV[3..], as account, weight or "", job id) to its account's lane
 * ARGV[1]..account, making the lane and its group ARGV[2] together when it is new, and sets the
 * lane's weight in the registry KEYS[1] (kept, or 1 for a new lane, when none is given); then rings
 * the bell KEYS[2] once, waking the members that wait. One script: a lane never exists without its
 * group, nor in the registry without its stream.
 */
const PUBLISH_SCRIPT = `for i = 3, #ARGV, 3 do
  local key = ARGV[1] .. ARGV[i]
  if redis.call('EXISTS', key) == 0 then
    redis.call('XGROUP', 'CREATE', key, ARGV[2], '0', 'MKSTREAM')
  end
  redis.call('XADD', key, '*', 'job', ARGV[i + 2])
  if ARGV[i + 1] == '' then
    redis.call('HSETNX', KEYS[1], ARGV[i], 1)
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
redis.call('XADD', KEYS[2], 'MAXLEN', '1', '*', 'n', '1')
return 0`

/**
 * One receive's round trip. Keeps the heads ARGV[7..6+2*ARGV[6]] (account, entry id) the member
 * ARGV[3] still holds (an idle time reset, as EXTEND_SCRIPT does); then, for every lane of the
 * registry KEYS[1] and the stream of older versions KEYS[3] (account ""), takes up to its room
 * (the triples after the heads: account, room, reclaim cursor; ARGV[5] for a lane not named):
 * entries whose holder let ARGV[4] ms pass first (XAUTOCLAIM), then new ones (XREADGROUP).
 * Answers { heads kept, the registry, per lane: account, next cursor, count, then id and job of
 * each entry, the bell's last id }.
 */
const TAKE_SCRIPT = `local base, group, member, visibility = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local keyOf = function(account)
  if account == '' then return KEYS[3] end
  return base .. account
end
local kept = {}
local at = 7
for i = 1, tonumber(ARGV[6]) do
  local account, id = ARGV[at], ARGV[at + 1]
  at = at + 2
  local key = keyOf(account)
  local mine = redis.pcall('XPENDING', key, group, id, id, 1, member)
  if type(mine) == 'table' and mine.err == nil and #mine == 1 then
    redis.call('XCLAIM', key, group, member, 0, id, 'JUSTID')
    kept[#kept + 1] = account
    kept[#kept + 1] = id
  end
end
local rooms, cursors = {}, {}
while at + 2 <= #ARGV do
  rooms[ARGV[at]] = tonumber(ARGV[at + 1])
  cursors[ARGV[at]] = ARGV[at + 2]
  at = at + 3
end
local registry = redis.call('HGETALL', KEYS[1])
local accounts = {}
for i = 1, #registry, 2 do accounts[#accounts + 1] = registry[i] end
if redis.call('EXISTS', KEYS[3]) == 1 then accounts[#accounts + 1] = '' end
local lanes = {}
local jobOf = function(fields)
  if type(fields) ~= 'table' then return '' end
  for f = 1, #fields, 2 do
    if fields[f] == 'job' then return fields[f + 1] end
  end
  return ''
end
for _, account in ipairs(accounts) do
  local room = rooms[account] or tonumber(ARGV[5])
  local key = keyOf(account)
  local cursor = cursors[account] or '0-0'
  local taken = {}
  if room > 0 then
    local reclaimed = redis.pcall('XAUTOCLAIM', key, group, member, visibility, cursor, 'COUNT', room)
    if type(reclaimed) == 'table' and reclaimed.err == nil then
      cursor = reclaimed[1]
      for _, entry in ipairs(reclaimed[2]) do
        if type(entry) == 'table' then
          taken[#taken + 1] = entry[1]
          taken[#taken + 1] = jobOf(entry[2])
        end
      end
    end
    local rest = room - #taken / 2
    if rest > 0 then
      local fresh = redis.pcall('XREADGROUP', 'GROUP', group, member, 'COUNT', rest, 'STREAMS', key, '>')
      if type(fresh) == 'table' and fresh.err == nil and fresh[1] then
        for _, entry in ipairs(fresh[1][2]) do
          taken[#taken + 1] = entry[1]
          taken[#taken + 1] = jobOf(entry[2])
        end
      end
    end
  end
  lanes[#lanes + 1] = account
  lanes[#lanes + 1] = cursor
  lanes[#lanes + 1] = tostring(#taken / 2)
  for _, value in ipairs(taken) do lanes[#lanes + 1] = value end
end
local bell = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
return { kept, registry, lanes, bell[1] and bell[1][1] or '0-0' }`

/**
 * Resets the idle time of the entries (ARGV[3..]) that the member ARGV[2] of group ARGV[1] still
 * holds, and of no other: an entry another member reclaimed after this one's visibility passed is
 * theirs, and a late extend must not take it back (XCLAIM alone moves any pending entry).
 */
const EXTEND_SCRIPT = `local extended = 0
for i = 3, #ARGV do
  if #redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1, ARGV[2]) == 1 then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
    extended = extended + 1
  end
end
return extended`

/**
 * Hands back the heads (ARGV[4..]) the member ARGV[2] holds and did not give out: their idle time
 * set to the visibility ARGV[3], so any member's next receive reclaims them, oldest first.
 */
const HAND_BACK_SCRIPT = `for i = 4, #ARGV do
  if #redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1, ARGV[2]) == 1 then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'IDLE', ARGV[3], 'JUSTID')
  end
end
return 0`

/**
 * Acknowledges and deletes entries of any number of lanes: after the lanes' base ARGV[1] and
 * group ARGV[2], per lane its account ("" for the stream of older versions KEYS[2]), a count,
 * then that many entry ids. Drops a lane (its stream, with its group, and its field in the
 * registry KEYS[1]) once it holds nothing: a publish makes it again. The stream of older
 * versions is kept. One script for every lane of an ack: a flush of acks is one round trip and
 * one script call, whatever the number of lanes it touches.
 */
const ACK_SCRIPT = `local at = 3
while at <= #ARGV do
  local account, count = ARGV[at], tonumber(ARGV[at + 1])
  local key = account == '' and KEYS[2] or ARGV[1] .. account
  local ids = {}
  for i = at + 2, at + 1 + count do ids[#ids + 1] = ARGV[i] end
  at = at + 2 + count
  redis.pcall('XACK', key, ARGV[2], unpack(ids))
  redis.call('XDEL', key, unpack(ids))
  if account ~= '' and redis.call('XLEN', key) == 0 then
    redis.call('DEL', key)
    redis.call('HDEL', KEYS[1], account)
  end
end
return 0`

/** Leaves the group of every lane (ARGV[4..]) where nothing is pending for the member: deleting a consumer drops its pending entries. */
const LEAVE_SCRIPT = `for i = 4, #ARGV do
  local key = ARGV[i] == '' and KEYS[1] or ARGV[1] .. ARGV[i]
  local pending = redis.pcall('XPENDING', key, ARGV[2], '-', '+', 1, ARGV[3])
  if type(pending) == 'table' and pending.err == nil and #pending == 0 then
    redis.pcall('XGROUP', 'DELCONSUMER', key, ARGV[2], ARGV[3])
  end
end
return 0`

/**
 * Entries one ack script takes at most: it unpacks a lane's ids into one XACK and one XDEL, and
 * Lua's stack holds some eight thousand values.
 */
export const ACK_CHUNK = 1_000

/** A script run by its SHA1 (EVALSHA), sent whole (EVAL) when the server does not have it yet. */
const script = (source: string) => {
  const sha = createHash("sha1").update(source).digest("hex")
  return (client: Client, keys: Array<string>, args: Array<string>) =>
    client.evalSha(sha, { keys, arguments: args }).catch((error: unknown) => {
      if (error instanceof ErrorReply && error.message.startsWith("NOSCRIPT")) return client.eval(source, { keys, arguments: args })
      throw error
    })
}
export const runPublish = script(PUBLISH_SCRIPT)
export const runTake = script(TAKE_SCRIPT)
export const runExtend = script(EXTEND_SCRIPT)
export const runHandBack = script(HAND_BACK_SCRIPT)
export const runAck = script(ACK_SCRIPT)
export const runLeave = script(LEAVE_SCRIPT)
