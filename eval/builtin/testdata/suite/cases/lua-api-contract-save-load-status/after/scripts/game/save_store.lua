-- save_store.lua - reads and writes the profile file on the console's
-- save partition.

local Json = require("lib.json")
local Fs = require("platform.fs")

local SaveStore = {}

local PROFILE = "profile.json"

-- load returns a status and a value: "ok" and the profile table, "missing"
-- and nil when there is no profile yet, or "corrupt" and an error message.
function SaveStore.load()
    if not Fs.exists(PROFILE) then
        return "missing", nil
    end
    local text, err = Fs.readAll(PROFILE)
    if not text then
        return "corrupt", err
    end
    local ok, data = pcall(Json.decode, text)
    if not ok then
        return "corrupt", "corrupt profile: " .. tostring(data)
    end
    return "ok", data
end

function SaveStore.save(profile)
    local ok, err = Fs.writeAtomic(PROFILE, Json.encode(profile))
    if not ok then
        return nil, err
    end
    return true
end

return SaveStore
