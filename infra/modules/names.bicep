// Resource names: <kind>-<prefix>-<token>, the token unique per subscription + resource group + prefix.
//
// main.bicep takes every name from here, and infra/deploy.sh deploys this module alone first (it has no
// resources, so that deployment only evaluates the names) to learn which SQL server and Key Vault the real
// deployment will use: whether the server exists decides how its Entra admin is set (modules/sql.bicep), and the
// vault is where the signing secret lives. Never "the first server/vault in the group".

@description('Short prefix of the resource names: lowercase letters and digits.')
@minLength(2)
@maxLength(10)
param namePrefix string

var prefix = toLower(namePrefix)
var compactPrefix = replace(prefix, '-', '')
var token = toLower(uniqueString(subscription().id, resourceGroup().id, prefix))

output prefix string = prefix
output identity string = 'id-${prefix}-${token}'
output storage string = take('st${compactPrefix}${token}', 24)
output keyVault string = take('kv${compactPrefix}${token}', 24)
output sqlServer string = 'sql-${prefix}-${token}'
output plan string = 'plan-${prefix}-${token}'
output functionApp string = 'func-${prefix}-${token}'
output logAnalytics string = 'log-${prefix}-${token}'
output appInsights string = 'appi-${prefix}-${token}'
output deploymentContainer string = 'app-package'
