using System;
using System.IO;
using System.Runtime.Serialization.Formatters.Binary;
using System.Threading.Tasks;
using UnityEngine;
using UnityEngine.Networking;

namespace Game.Persistence
{
    /// <summary>Loads and stores the player's save slots, locally and in the cloud.</summary>
    public sealed class SaveService
    {
        private readonly string _root;
        private readonly CloudSaveClient _cloud;

        public SaveService(string root, CloudSaveClient cloud)
        {
            _root = root;
            _cloud = cloud;
        }

        public SaveGame LoadLocal(int slot)
        {
            var path = Path.Combine(_root, $"slot{slot}.json");
            if (!File.Exists(path))
            {
                return null;
            }
            return JsonUtility.FromJson<SaveGame>(File.ReadAllText(path));
        }

        public void StoreLocal(int slot, SaveGame save)
        {
            var path = Path.Combine(_root, $"slot{slot}.json");
            var tmp = path + ".tmp";
            File.WriteAllText(tmp, JsonUtility.ToJson(save));
            if (File.Exists(path))
            {
                File.Replace(tmp, path, null);
            }
            else
            {
                File.Move(tmp, path);
            }
        }

        public async Task<SaveGame> LoadCloud(int slot)
        {
            string json = await _cloud.DownloadText($"saves/{slot}");
            if (json != null)
            {
                return JsonUtility.FromJson<SaveGame>(json);
            }
            byte[] legacy = await _cloud.DownloadBytes($"legacy/{slot}.sav");
            if (legacy == null)
            {
                return null;
            }
            using (var ms = new MemoryStream(legacy))
            {
                var formatter = new BinaryFormatter();
                return (SaveGame)formatter.Deserialize(ms);
            }
        }
    }
}
