-- quest_tracker.lua - keeps the player's active quests and their objective
-- progress; the HUD reads it every frame, the server pushes updates.

local Events = require("core.events")
local QuestDb = require("data.quest_db")

local QuestTracker = {}
QuestTracker.__index = QuestTracker

function QuestTracker.new(player)
    local self = setmetatable({}, QuestTracker)
    self.player = player
    self.active = {}      -- quest id -> { def = ..., progress = { [objective] = n } }
    self.completed = {}   -- quest id -> true
    return self
end

function QuestTracker:accept(questId)
    if self.active[questId] or self.completed[questId] then
        return false
    end
    local def = QuestDb.get(questId)
    if not def then
        return false
    end
    self.active[questId] = { def = def, progress = {} }
    Events.emit("quest_accepted", questId)
    return true
end

function QuestTracker:progressOf(questId, objective)
    local q = self.active[questId]
    if not q then
        return 0
    end
    return q.progress[objective] or 0
end

function QuestTracker:complete(questId)
    if not self.active[questId] then
        return
    end
    self.active[questId] = nil
    self.completed[questId] = true
    Events.emit("quest_completed", questId)
end

return QuestTracker
