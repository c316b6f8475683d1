-- boot.lua - runs once when the title screen appears.

local SaveStore = require("game.save_store")
local Settings = require("game.settings")
local Ui = require("ui.root")

local Boot = {}

local function defaultProfile()
    return { version = 3, slots = {}, settings = Settings.defaults() }
end

function Boot.run()
    local profile, err = SaveStore.load()
    if not profile then
        Ui.toast("No profile found, starting fresh (" .. tostring(err) .. ")")
        profile = defaultProfile()
    end
    Settings.apply(profile.settings)
    Ui.showTitle(profile)
    return profile
end

return Boot
