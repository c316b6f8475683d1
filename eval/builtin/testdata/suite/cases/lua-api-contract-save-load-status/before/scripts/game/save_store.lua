-- save_store.lua - reads and writes the profile file on the console's
-- save partition.

local Json = require("lib.json")
local Fs = require("platform.fs")

local SaveStore = {}

local PROFILE = "profile.json"

-- load returns the profile table, or nil and an error message when there is
-- no profile yet or it cannot be read.
function SaveStore.load()
    local text, err = Fs.readAll(PROFILE)
    if not text then
        return nil, err
    end
    local ok, data = pcall(Json.decode, text)
    if not ok then
        return nil, "corrupt profile: " .. tostring(data)
    end
    return data
end

function SaveStore.save(profile)
    local ok, err = Fs.writeAtomic(PROFILE, Json.encode(profile))
    if not ok then
        return nil, err
    end
    return true
end

return SaveStore
