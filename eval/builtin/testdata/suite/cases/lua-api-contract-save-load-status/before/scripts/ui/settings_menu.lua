-- settings_menu.lua - the options screen; "Reset profile" lives here.

local SaveStore = require("game.save_store")
local Settings = require("game.settings")
local Ui = require("ui.root")

local SettingsMenu = {}

function SettingsMenu.open()
    local profile = SaveStore.load()
    if not profile then
        Ui.toast("Could not read the profile; showing defaults")
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
