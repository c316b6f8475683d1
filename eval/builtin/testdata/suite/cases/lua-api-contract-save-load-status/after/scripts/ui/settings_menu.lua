-- settings_menu.lua - the options screen; "Reset profile" lives here.

local SaveStore = require("game.save_store")
local Settings = require("game.settings")
local Ui = require("ui.root")

local SettingsMenu = {}

function SettingsMenu.open()
    local status, profile = SaveStore.load()
    if status == "corrupt" then
        Ui.toast("Save data is corrupted; showing defaults")
        return Ui.showSettings(Settings.defaults())
    elseif status == "missing" then
        return Ui.showSettings(Settings.defaults())
    end
    return Ui.showSettings(profile.settings)
end

function SettingsMenu.reset()
    local ok, err = SaveStore.save({ version = 3, slots = {}, settings = Settings.defaults() })
    if not ok then
        Ui.toast("Could not reset the profile: " .. tostring(err))
    end
    return ok
end

return SettingsMenu
