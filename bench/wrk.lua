-- The request script of `npm run bench`. WRK_METHOD and WRK_HEADERS (one "name: value" per
-- line) describe every request; with WRK_BODIES (a file, one body per line) each request sends the
-- next line, so every POST of a run is a new one. done() prints one JSON line of figures.
local method = os.getenv("WRK_METHOD") or "GET"
local headers = {}
for line in (os.getenv("WRK_HEADERS") or ""):gmatch("[^\n]+") do
  local name, value = line:match("^([^:]+):%s*(.*)$")
  if name then headers[name] = value end
end
local bodies = {}
local file = os.getenv("WRK_BODIES")
if file and file ~= "" then
  for line in io.lines(file) do bodies[#bodies + 1] = line end
end
local next_body = 0

request = function()
  if #bodies == 0 then return wrk.format(method, nil, headers, nil) end
  next_body = next_body % #bodies + 1
  return wrk.format(method, nil, headers, bodies[next_body])
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests":%d,"duration_us":%d,"errors":%d,"non2xx":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99), latency.max))
end
