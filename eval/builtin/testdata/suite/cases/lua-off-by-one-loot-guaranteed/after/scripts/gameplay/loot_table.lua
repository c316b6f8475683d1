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

-- rarest returns the index of the lowest-weight entry, scanning from the
-- end so that on ties the most recently added entry wins.
function LootTable:rarest()
    local best = #self.entries
    for i = #self.entries, 0, -1 do
        if self.entries[i].weight < self.entries[best].weight then
            best = i
        end
    end
    return best
end

function LootTable:rollMany(rng, n, rareWeight)
    local out = {}
    local gotRare = false
    for i = 1, n do
        local e = self:roll(rng)
        gotRare = gotRare or e.weight <= rareWeight
        out[i] = e
    end
    if not gotRare and n > 0 then
        out[n] = self.entries[self:rarest()]
    end
    return out
end

function LootTable:drop(rng)
    local e = self:roll(rng)
    return { item = e.item, count = rng:range(e.min or 1, e.max or 1) }
end

return LootTable
