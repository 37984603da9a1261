-- wrk script of make bench-api (scripts/bench-api.sh): every request POSTs one message to a room
-- through the server API, with an idempotency key of its own, so each 200 is one stored message.
--
--   wrk -c 50 -t 1 -d 25s --latency -s bench/api/api_post.lua http://127.0.0.1:PORT \
--       -- <room_id> <bearer key> <result file>
--
-- Writes one JSON object to <result file> at the end: the requests wrk generated (`sent`) and
-- completed, the statuses over 399 and socket errors wrk counted, and the latency percentiles (us).
-- `sent` minus `requests` is what was still in flight when wrk stopped: the server may have stored
-- those too, so a room holds between `requests` and `sent` of the posts (wrk calls request() once
-- before the run to check it, so `sent` counts one more than went out).

local threads = {}
local next_id = 0

-- Main state: one table entry and one id per thread.
function setup(thread)
  next_id = next_id + 1
  thread:set("tid", next_id)
  table.insert(threads, thread)
end

-- Thread state from here on (tid is set by setup before init runs).
local body_pad = string.rep("x", 40)

function init(args)
  room = args[1]
  result_file = args[3]
  sent = 0
  path = "/api/v1/rooms/" .. room .. "/messages"
  headers = {
    ["Authorization"] = "Bearer " .. args[2],
    ["Content-Type"] = "application/json",
  }
end

function request()
  sent = sent + 1
  -- ~64 B of text, the chat workload's most common size; the key is unique per thread and request.
  local key = "wrk-" .. tid .. "-" .. sent
  local body = '{"text":"' .. key .. " " .. body_pad .. '","idempotency_key":"' .. key .. '"}'
  return wrk.format("POST", path, headers, body)
end

function done(summary, latency, requests)
  local total_sent = 0
  local file = nil
  for _, t in ipairs(threads) do
    total_sent = total_sent + t:get("sent")
    file = file or t:get("result_file")
  end
  local e = summary.errors
  local out = string.format(
    '{"sent": %d, "requests": %d, "duration_us": %d, "bytes": %d, "status_errors": %d, ' ..
    '"connect_errors": %d, "read_errors": %d, "write_errors": %d, "timeouts": %d, ' ..
    '"latency_us": {"p50": %d, "p90": %d, "p99": %d, "p999": %d, "max": %d, "mean": %.1f}}\n',
    total_sent, summary.requests, summary.duration, summary.bytes, e.status, e.connect, e.read,
    e.write, e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean)
  local f = assert(io.open(file, "w"))
  f:write(out)
  f:close()
end
