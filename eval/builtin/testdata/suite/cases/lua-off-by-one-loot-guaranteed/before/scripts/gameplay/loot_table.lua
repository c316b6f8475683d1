-- loot_table.lua - weighted random drops for chests and enemies.

local Rng = require("core.rng")

local LootTable = {}
LootTable.__index = LootTable

-- entries: array of { item = "id", weight = n, min = a, max = b }
function LootTable.new(entries)
    local self = setmetatable({}, LootTable)
    self.entries = entries
    self.total = 0
    for _, e in ipairs(entries) do
        assert(e.weight > 0, "loot weight must be positive: " .. tostring(e.item))
        self.total = self.total + e.weight
    end
    return self
end

-- roll returns one entry, chosen with probability weight / total.
function LootTable:roll(rng)
    local r = rng:range(1, self.total)
    for _, e in ipairs(self.entries) do
        r = r - e.weight
        if r <= 0 then
            return e
        end
    end
    return self.entries[#self.entries]
end

function LootTable:drop(rng)
    local e = self:roll(rng)
    return { item = e.item, count = rng:range(e.min or 1, e.max or 1) }
end

return LootTable
