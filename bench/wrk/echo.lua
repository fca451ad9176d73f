-- wrk: POST to the conformance fixture's echo (PATH_ECHO, default /echo),
-- every request a new Idempotency-Key (a real execution and a stored
-- response when the route is guarded; the header is ignored otherwise).
local path = os.getenv("PATH_ECHO") or "/echo"
local run = os.getenv("RUN") or "0"
local threads = 0
local n = 0
id = 0 -- global: setup() sets it per thread

function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end

function request()
  n = n + 1
  return wrk.format("POST", path,
    {["Content-Type"] = "application/json",
     ["Idempotency-Key"] = string.format("e%s-%d-%d", run, id, n)},
    '{"amount_cents":18000,"currency":"BRL","customer":"cliente-42"}')
end
