-- wrk: the worker's hot path, record+claim then complete. Each thread
-- sends POST /v1/intents with a claim for a new intent; every claim it is
-- answered is completed by the thread's next request (whichever of its
-- connections sends it), so half the requests write a claim and half
-- settle one. IDEM_TOKEN: the bearer token; RUN: keeps references new.
local token = os.getenv("IDEM_TOKEN")
local run = os.getenv("RUN") or "0"
local threads = 0
local n = 0
local claims = {}
id = 0 -- global: setup() sets it per thread

function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end

local headers = {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}

function request()
  local c = table.remove(claims)
  if c then
    return wrk.format("POST", "/v1/actions/" .. c.key .. "/complete", headers,
      string.format('{"token":%s,"response":{"charge_id":"ch_%s"}}', c.token, c.key:sub(1, 12)))
  end
  n = n + 1
  local body = string.format(
    '{"action":"pix.cobranca","payload":{"cliente_id":"cli-1","valor":"180.00",' ..
    '"chave_pix_destino":"+55 11 98888-7777","referencia_intencao":"c%s-%d-%d"},' ..
    '"claim":{"lease_ms":30000}}', run, id, n)
  return wrk.format("POST", "/v1/intents", headers, body)
end

function response(status, headers, body)
  if status == 201 or status == 200 then
    local key = body:match('"key":"(%x+)"')
    local tok = body:match('"claim":{[^}]-"token":(%d+)')
    if key and tok and body:find('"status":"claimed"', 1, true) then
      table.insert(claims, {key = key, token = tok})
    end
  end
end
